"""The worker daemon's former name: `statestream.spark.patches.python_daemon` under it.

Kept so that a `spark.python.daemon.module = "statestream.python_daemon"` set elsewhere (an
older `[spark.extra_conf]`, a cluster's spark-defaults.conf) still starts the same daemon.
"""

from __future__ import annotations

from statestream.spark.patches.python_daemon import drop_archives_from_path, main

__all__ = ["drop_archives_from_path", "main"]

if __name__ == "__main__":
    main()
