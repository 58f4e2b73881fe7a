"""The settings section `stats` and the definitions the job builds from it."""

from __future__ import annotations

import pytest

from statestream.config import load_settings
from statestream.errors import ConfigError
from statestream.queries.stats.job import stats_spec
from statestream.stats import StatsSpec


@pytest.fixture(autouse=True)
def _no_shell_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """No STATESTREAM_STATS__* variables of the developer's shell."""
    import os

    for key in os.environ:
        if key.startswith("STATESTREAM_STATS__"):
            monkeypatch.delenv(key)


def test_the_defaults_are_the_seeds_definitions() -> None:
    spec = stats_spec(load_settings())
    assert spec == StatsSpec()
    assert (spec.rated_power_w, spec.window_ms, spec.duty_window_ms) == (20_000.0, 60_000, 600_000)
    assert (spec.duty_slide_ms, spec.duty_limit, spec.sampling_interval_s) == (60_000, 0.4, 1.0)


def test_settings_in_seconds_and_kw_become_ms_and_w(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("STATESTREAM_STATS__RATED_POWER_KW", "7.5")
    monkeypatch.setenv("STATESTREAM_STATS__WINDOW_S", "30")
    monkeypatch.setenv("STATESTREAM_STATS__ALLOWED_LATENESS_S", "0.25")
    spec = stats_spec(load_settings())
    assert (spec.rated_power_w, spec.window_ms, spec.allowed_lateness_ms) == (
        7_500.0,
        30_000,
        250.0,
    )


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DUTY_SLIDE_S", "70", "whole number of slides"),
        ("POWER_QUANTITY", "vaPower", "must contain {c}"),
        ("RATED_POWER_KW", "0", "greater than 0"),
        ("DUTY_LIMIT", "1.5", "less than or equal to 1"),
    ],
)
def test_bad_values_are_one_line_errors(
    monkeypatch: pytest.MonkeyPatch, name: str, value: str, message: str
) -> None:
    monkeypatch.setenv(f"STATESTREAM_STATS__{name}", value)
    with pytest.raises(ConfigError, match=message) as raised:
        load_settings()
    assert f"stats.{name.lower()}" in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_checkpoint_with_other_window_lengths_is_refused(tmp_path) -> None:
    from statestream.queries.stats.job import check_checkpoint_windows

    check_checkpoint_windows(tmp_path / "checkpoint", StatsSpec())
    check_checkpoint_windows(tmp_path / "checkpoint", StatsSpec(duty_limit=0.5))  # same windows
    with pytest.raises(ConfigError, match="use a new --checkpoint"):
        check_checkpoint_windows(tmp_path / "checkpoint", StatsSpec(window_ms=30_000))
