"""What the patches check before they apply: the PySpark version, once-only warnings."""

from __future__ import annotations

import logging

log = logging.getLogger("statestream.spark.patches")
_logged: set[str] = set()  # the warnings this process has given, each given once


def pyspark_version() -> str:
    import pyspark

    return pyspark.__version__


def unsupported(written_for: str) -> str | None:
    """Why a patch written for PySpark `written_for` (a version prefix: "4.1.") does not apply
    to the PySpark installed here; None when it does."""
    version = pyspark_version()
    if version.startswith(written_for):
        return None
    return f"written for pyspark {written_for}x, found {version}"


def warn_once(message: str) -> None:
    """Log `message` as a warning unless this process has logged it already."""
    if message not in _logged:
        _logged.add(message)
        log.warning("%s", message)
