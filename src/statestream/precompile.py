"""Every module whose loops numba compiles on import and caches beside its sources.

`make setup` and `scripts/pack-spark-env.sh` run `python -m statestream.precompile` once, so
that no job's first batch waits for a compiler: later imports load the loops from the caches.
`tests/test_precompile.py` fails when a module that caches compiled loops is missing here.
"""

import statestream.codecs.json_lines  # the pairs' JSON writer
import statestream.codecs.json_numbers  # the JSON number reader (json_records uses it)
import statestream.codecs.json_records  # the records' JSON reader
import statestream.join.compiled  # the join engine's compiled steps
import statestream.join.name_index  # the names' bytes index (`Utf8Names`)
import statestream.join.things  # the join engine's kernels

# named, so that no linter takes the imports for unused ones: importing them is the point
MODULES = (
    statestream.codecs.json_lines,
    statestream.codecs.json_numbers,
    statestream.codecs.json_records,
    statestream.join.compiled,
    statestream.join.name_index,
    statestream.join.things,
)
