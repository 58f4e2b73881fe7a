"""`make setup`'s step for the driver JVM's class archive (`jobs.class_archive`): written
unless it is up to date, one line either way; a failure is a warning, for the archive is an
optimisation only (Spark starts without it, only slower).

    .venv/bin/python -m statestream.jobs.class_archive_setup
"""

from __future__ import annotations

from statestream.config import load_settings
from statestream.jobs.class_archive import archive_path, write_archive
from statestream.jobs.session import spark_options


def main() -> int:
    """`make setup`'s step: the archive written unless it exists; one line either way."""
    settings = load_settings()
    if not settings.spark.class_archive:
        print("setup: JVM class archive: off (spark.class_archive is false)")
        return 0
    target = archive_path(settings, spark_options(settings, new_driver=True))
    if target.is_file():
        print(f"setup: JVM class archive {target.name} is up to date")
        return 0
    print("setup: writing the driver JVM's class archive (a short Spark training run)", flush=True)
    try:
        write_archive(target)
    except (RuntimeError, OSError, ValueError) as problem:
        # an optimisation only: Spark starts without it, only slower
        print(f"setup: warning: no JVM class archive: {problem}")
        return 0
    size_mb = target.stat().st_size / 1e6
    print(f"setup: JVM class archive {target.name} written ({size_mb:.0f} MB)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
