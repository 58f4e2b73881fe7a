"""`statestream.join` imports its modules on first use of their names (see the processors'
import test, tests/jobs/test_processor_imports.py)."""

from __future__ import annotations

import pytest

import statestream.join as join


def test_every_name_comes_from_its_module() -> None:
    for name in join.__all__:
        assert getattr(join, name) is not None
    from statestream.join import JoinRouter
    from statestream.join.router import JoinRouter as defined

    assert JoinRouter is defined


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Nothing'"):
        join.Nothing  # noqa: B018
