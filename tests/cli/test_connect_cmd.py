"""`statestream connect mqtt`'s group options as a user runs them, refused before any broker is
asked (the MQTT ports point where nobody listens, so a check that came too late would fail with
"cannot reach"); and `bench ingest --instances`' counts and figures."""

from __future__ import annotations

import pytest
import typer

from statestream.cli.bench_ingest_cmd import combined_figures, instance_counts
from tests.support import free_ports, run_cli


@pytest.fixture
def no_broker() -> dict[str, str]:
    plain, tls = free_ports(2)
    return {"STATESTREAM_MQTT__PORT": str(plain), "STATESTREAM_MQTT__TLS_PORT": str(tls)}


def test_a_bad_share_group_is_one_line(no_broker: dict[str, str]) -> None:
    result = run_cli("connect", "mqtt", "--instances", "2", "--group", "plant/a", env=no_broker)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: 'plant/a' cannot name a share group: it takes one or more characters, none of / + #"
    ]


def test_an_instance_of_a_group_is_not_a_group(no_broker: dict[str, str]) -> None:
    result = run_cli("connect", "mqtt", "--instances", "2", "--member-of", "g", env=no_broker)
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == [
        "error: --member-of is one instance of a group: not with --instances"
    ]


def test_a_group_without_a_broker_stops_before_it_starts_an_instance(
    no_broker: dict[str, str],
) -> None:
    """The check for a larger group's session is the group's first contact with the broker."""
    result = run_cli("connect", "mqtt", "--instances", "2", env=no_broker, timeout_s=60)
    assert result.exit_code == 2
    [line] = result.stderr.strip().splitlines()
    assert line.startswith("error: cannot reach the MQTT broker at ")
    assert "connector-1" not in result.stderr + result.stdout


def test_the_help_says_the_instances_have_sessions_of_their_own() -> None:
    result = run_cli("connect", "mqtt", "--help")
    text = " ".join(result.stdout.replace("│", " ").split())
    assert "CLIENT_ID-i, never the single connector's CLIENT_ID" in text
    assert "--group" in text and "--member-of" not in text  # the parent's option, hidden


def test_bench_ingest_takes_comma_separated_instance_counts() -> None:
    assert instance_counts("1,2") == [1, 2]
    assert instance_counts(" 4 ") == [4]
    for bad in ("", "0", "1,1", "1,x", "33"):
        with pytest.raises(typer.BadParameter):
            instance_counts(bad)


def _run(rows_per_s: int, client: str, instances: int) -> dict:
    cpu = {"connector_cpu_us_per_row": 20.0}
    return {"rows_per_s": rows_per_s, "client": client, "instances": instances, **cpu}


def test_bench_ingest_nests_the_runs_of_further_counts_and_paho() -> None:
    runs = {
        ("statestream", 1): _run(30_000, "statestream", 1),
        ("statestream", 2): _run(45_000, "statestream", 2),
        ("paho", 1): _run(20_000, "paho", 1),
    }
    figures = combined_figures(runs, ["statestream", "paho"], [1, 2])
    assert (figures["rows_per_s"], figures["instances"]) == (30_000, 1)
    assert figures["instances_2"] == runs["statestream", 2]
    assert figures["paho"] == runs["paho", 1] and figures["ratio_to_paho"] == 1.5
    alone = combined_figures({("paho", 2): _run(9, "paho", 2)}, ["paho"], [2])
    assert alone == _run(9, "paho", 2)
