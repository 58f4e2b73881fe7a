"""Every module whose loops numba compiles on import and caches beside its sources.

`make setup` and `scripts/pack-spark-env.sh` run `python -m statestream.precompile` once, so
that no job's first batch waits for a compiler (~25 s, then loaded from the caches).
"""

import statestream.join.name_index  # the names' bytes index (`Utf8Names`)
import statestream.join.things  # the join engine's kernels
import statestream.json_lines  # the pairs' JSON writer
import statestream.json_records  # noqa: F401  the records' JSON reader
