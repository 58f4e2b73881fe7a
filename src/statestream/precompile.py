"""Every module whose loops numba compiles on import and caches beside its sources.

`make setup` and `scripts/pack-spark-env.sh` run `python -m statestream.precompile` once, so
that no job's first batch waits for a compiler (~25 s, then loaded from the caches).
"""
