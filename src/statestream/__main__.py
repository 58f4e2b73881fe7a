"""`python -m statestream` and the `statestream` console script: the command line.

The command line is the pipeline's: without the `pipeline` extra (`pip install statestream`
brings the library alone), or on Python 3.10 (the library's, not the pipeline's), it says so in
one line instead of a traceback.
"""

import sys

NEEDS_THE_EXTRA = (
    "statestream's command line needs the pipeline extra: pip install 'statestream[pipeline]'"
)
NEEDS_PYTHON_311 = (
    "statestream's command line needs Python 3.11 or newer, with the pipeline extra: "
    "pip install 'statestream[pipeline]' there (the library alone runs on 3.10)"
)


def main() -> None:
    if sys.version_info < (3, 11):
        sys.exit(NEEDS_PYTHON_311)
    try:
        from statestream.cli import main as command_line
    except ModuleNotFoundError as missing:  # one of the pipeline's libraries (typer, kafka…)
        if (missing.name or "").partition(".")[0] == "statestream":
            raise
        sys.exit(NEEDS_THE_EXTRA)
    command_line()


if __name__ == "__main__":
    main()
