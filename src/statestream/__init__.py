"""statestream: stateful, high-throughput stream processing of machine data on Apache Spark."""

from statestream.errors import StatestreamError

__version__ = "0.1.0"
__all__ = ["StatestreamError", "__version__"]
