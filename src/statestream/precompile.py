"""Every module whose loops numba compiles on import and caches beside its sources.

`make setup` and `scripts/pack-spark-env.sh` run `python -m statestream.precompile` once, so
that no job's first batch waits for the compiler: later imports load the loops from the caches.
"""
