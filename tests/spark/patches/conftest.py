"""Each test sees the patches' warnings afresh (they are logged once per process)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from statestream.spark.patches import _checks


@pytest.fixture(autouse=True)
def fresh_warnings() -> Iterator[None]:
    logged = set(_checks._logged)
    _checks._logged.clear()
    yield
    _checks._logged.clear()
    _checks._logged.update(logged)
