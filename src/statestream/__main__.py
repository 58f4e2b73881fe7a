"""`python -m statestream`: the same command line as `statestream`."""

from statestream.cli import main

main()
