"""What statestream changes in Spark itself: the patches of `statestream.spark.patches`.

Nothing here imports pyspark when imported: the worker daemon
(`statestream.spark.patches.python_daemon`) runs before pyspark may be imported.
"""
