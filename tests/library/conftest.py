"""The library's tests: statestream installed alone (`pip install statestream`), in a plain
SparkSession.

The version matrix (`scripts/test_library.sh`) runs them with `--confcutdir tests/library`, in a
venv without the pipeline extra, where the main suite's conftest (settings, services) cannot be
imported: `spark` is then `plain_spark`'s, a session made as a PySpark user makes one. In the
main suite its conftest's `spark`, the run's one session, takes precedence (a conftest's fixture
overrides a plugin's), so no second session is started there.
"""

from __future__ import annotations

import pytest

from tests.library import plain_spark


def pytest_configure(config: pytest.Config) -> None:
    if not config.pluginmanager.is_registered(plain_spark):
        config.pluginmanager.register(plain_spark, "statestream-plain-spark")
