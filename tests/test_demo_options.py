"""What `statestream demo` starts, by its options (no process is started)."""

from __future__ import annotations

from statestream.config import Settings
from statestream.demo import DemoOptions, demo_parts


def _simulator(options: DemoOptions) -> list[str]:
    (part,) = [p for p in demo_parts(Settings(), options) if p.name == "simulator"]
    return part.args


def _option(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


def test_by_default_event_times_follow_the_clock_one_row_per_machine_a_second() -> None:
    args = _simulator(DemoOptions(things=6))
    assert "--follow-clock" in args
    assert (_option(args, "--rate"), _option(args, "--things")) == ("6", "6")


def test_no_retime_replays_the_sample_shifted_to_start_now_at_the_rate_given() -> None:
    args = _simulator(DemoOptions(rate=50, things=3, retime=False))
    assert "--follow-clock" not in args and "--retime" in args
    assert _option(args, "--rate") == "50"


def test_the_vehicle_queries_run_in_the_pipeline_unless_left_out() -> None:
    settings = Settings()
    parts = {p.name: p for p in demo_parts(settings, DemoOptions())}
    assert parts["pipeline"].args == ["run", "pipeline", "--from", "latest", "--vehicles"]
    root = parts["pipeline"].environment["STATESTREAM_SPARK__CHECKPOINT_ROOT"]
    assert root == str(settings.checkpoint_root / "demo")
    without = {p.name: p for p in demo_parts(settings, DemoOptions(vehicles=False))}
    assert list(without) == ["dashboard", "connector", "pipeline", "simulator"]
    assert "--vehicles" not in without["pipeline"].args


def test_the_vehicle_simulator_publishes_where_the_connector_reads() -> None:
    def vehicle_simulator(settings: Settings) -> list[str]:
        parts = {p.name: p for p in demo_parts(settings, DemoOptions(vehicle_count=7))}
        return parts["vehicle-simulator"].args

    args = vehicle_simulator(Settings())
    assert args[:2] == ["simulate", "vehicles"] and _option(args, "--vehicles") == "7"
    assert _option(args, "--topic-root") == ""
    ingest = Settings().ingest.model_copy(
        update={"processors": {"t/m": "machine", "t/x/hfp/v2/journey/ongoing/vp/#": "vehicles"}}
    )
    args = vehicle_simulator(Settings().model_copy(update={"ingest": ingest}))
    assert _option(args, "--topic-root") == "t/x"
