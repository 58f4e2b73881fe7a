"""A chaos run's own names, so that earlier data never counts and nothing else is touched: its
topics (`chaos.<run>.*`: every topic a registered query reads or writes, and the commit markers),
MQTT topic (and, with vehicles, the root of their HFP topics) and connector session, InfluxDB
database and checkpoints and logs under `<data_dir>/chaos/<run>/`. Removed at the end of a run
that passed; a failed run keeps them for a look and says where they are.
"""

from __future__ import annotations

import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka.admin import AdminClient

from statestream.config import Settings
from statestream.errors import ConfigError
from statestream.ingest.hfp import TOPIC_FILTER
from statestream.queries import REGISTRY
from statestream.services.topics import create_topics
from statestream.sinks.influx import InfluxWriter, influx_rows

_TOPICS = {
    "machine_data": "data",
    "machine_out": "out",
    "dead_letter": "deadletter",
    "late": "late",
    "stats": "stats",
    "alerts": "alerts",
    "vehicle_positions": "vehicles",
    "vehicle_cells": "cells",
    "vehicle_alerts": "vehicle-alerts",
    "commits": "commits",
    "machine_quantities": "quantities",
}


def _topic_suffixes() -> dict[str, str]:
    """The run's name suffix of each topic field: `_TOPICS`', and for a topic of a registered
    query not named there, the field's own (so a new query's output is the run's own too; a
    shared topic would hold an earlier run's results, which the checks count as unexpected)."""
    named = [field for q in REGISTRY for field in (*q.input_topics, *q.output_topics)]
    return {**_TOPICS, **{f: f.replace("_", "-") for f in named if f not in _TOPICS}}


@dataclass(frozen=True)
class Workspace:
    """The run's name, its settings (the configured ones with the run's own names) and folder."""

    run_id: str
    settings: Settings
    folder: Path

    @property
    def topics(self) -> list[str]:
        return [getattr(self.settings.topics, name) for name in _topic_suffixes()]

    @property
    def logs(self) -> Path:
        return self.folder / "logs"

    def describe(self) -> str:
        return (
            f"topics chaos.{self.run_id}.*, InfluxDB database {self.settings.influx.database}, "
            f"checkpoints and logs in {self.folder}"
        )


def refuse_external(settings: Settings) -> None:
    """`ConfigError` unless Kafka, the MQTT broker and InfluxDB are the local services."""
    external = [
        name
        for name, local in (
            ("kafka", settings.kafka.is_local),
            ("mqtt", settings.mqtt.is_local),
            ("influx", settings.influx.is_local),
        )
        if not local
    ]
    if external:
        raise ConfigError(
            f"statestream chaos kills and restarts the local services, but {', '.join(external)} "
            "point at another machine; run it with the local ones (statestream config show)"
        )


def new_workspace(settings: Settings, seed: int, *, vehicles: bool = False) -> Workspace:
    """The settings of a new run, its topics created and its InfluxDB database made."""
    run_id = f"{time.strftime('%Y%m%d%H%M%S')}_{seed}"
    workspace = run_workspace(settings, run_id, vehicles=vehicles)
    workspace.logs.mkdir(parents=True, exist_ok=True)
    create_topics(workspace.settings)
    InfluxWriter(workspace.settings.influx).ensure_database()
    return workspace


def run_workspace(settings: Settings, run_id: str, *, vehicles: bool = False) -> Workspace:
    """The names of run `run_id` (nothing created yet). With `vehicles` the connector also
    takes the HFP topics under the run's root (`vehicle_root`) to the positions topic."""
    folder = settings.paths.data_dir / "chaos" / run_id
    topics = settings.topics.model_copy(
        update={name: f"chaos.{run_id}.{suffix}" for name, suffix in _topic_suffixes().items()}
    )
    mqtt_topic = f"statestream-chaos/{run_id}/states"
    processors: dict[str, str] = {mqtt_topic: "machine"}
    if vehicles:
        processors[vehicle_root(run_id) + TOPIC_FILTER] = "vehicles"
    ingest = settings.ingest.model_copy(
        update={
            "client_id": f"statestream-chaos-{run_id}",
            "envelope": "none",
            "processors": processors,
        }
    )
    run_settings = settings.model_copy(
        update={
            "topics": topics,
            "mqtt": settings.mqtt.model_copy(update={"topic": mqtt_topic}),
            "ingest": ingest,
            "influx": settings.influx.model_copy(update={"database": f"chaos_{run_id}"}),
            "spark": settings.spark.model_copy(update={"checkpoint_root": folder / "checkpoints"}),
        }
    )
    return Workspace(run_id, run_settings, folder)


def vehicle_root(run_id: str) -> str:
    """What goes before `/hfp` in the topics of run `run_id`'s vehicles."""
    return f"statestream-chaos/{run_id}"


def remove_workspace(workspace: Workspace) -> None:
    """Delete the run's topics, database, checkpoints and logs."""
    admin = AdminClient(workspace.settings.kafka.client_config())
    for future in admin.delete_topics(workspace.topics).values():
        future.result(30)
    influx = workspace.settings.influx
    influx_rows(influx, f'DROP DATABASE "{influx.database}"', database=None)
    shutil.rmtree(workspace.folder, ignore_errors=True)
