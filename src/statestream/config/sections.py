"""The sections of the settings: one frozen model per concern (kafka, mqtt, influx, …)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationInfo, field_validator

SECRETS_FILE_NAME = "secrets.json"
LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_MEMORY = re.compile(r"^(?P<number>\d+)(?:(?P<unit>[kmgt])b?)?$", re.IGNORECASE)


def memory_size(value: str) -> str:
    """`value` if it is a memory size as Spark reads one (512m, 2g, 2gb; a plain number: MiB)."""
    jvm_memory_size(value)  # raises if it is none
    return value


def jvm_memory_size(value: str) -> str:
    """A `memory_size` as a JVM flag takes it (2gb → 2g; 2048 → 2048m)."""
    match = _MEMORY.match(value)
    if match is None:
        raise ValueError(f"expected a size such as 512m or 2g, got {value!r}")
    return match["number"] + (match["unit"] or "m").lower()


def project_root() -> Path:
    """The source checkout this package runs from (editable install), else the working folder."""
    candidate = Path(__file__).resolve().parents[3]
    if (candidate / "pyproject.toml").is_file() and (candidate / "src" / "statestream").is_dir():
        return candidate
    return Path.cwd()


class _Section(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class MqttSettings(_Section):
    """The MQTT broker the simulator publishes to and the connector subscribes to."""

    host: str = "localhost"
    port: int = Field(1883, ge=1, le=65535)
    username: str = "statestream"
    password: SecretStr | None = Field(None, description="generated on first start if unset")
    topic: str = "machine/states"
    max_inflight_messages: int = Field(
        1000, ge=0, description="QoS 1/2 messages the broker has in flight per client (0: no cap)"
    )
    max_queued_messages: int = Field(
        0,
        ge=0,
        description="QoS 1/2 messages the broker queues per client beyond those in flight; "
        "0 = no cap, so a slow or stopped connector loses nothing (the broker drops above a cap)",
    )
    save_after_changes: int = Field(
        0,
        ge=0,
        description="the local broker saves its persistence file after this many changes "
        "(messages queued, subscriptions); 0: every 60 s. A broker killed with -9 loses what it "
        "acknowledged since its last save and had not passed on yet; each save rewrites the "
        "whole store, so saving often caps the rate (`statestream chaos --mqtt-saves` compares)",
    )

    tls: bool | None = Field(
        None,
        description="TLS to the broker, verified against ca_file; default: on for the local "
        "broker (its TLS listener is tls_port), off for another",
    )
    tls_port: int = Field(8883, ge=1, le=65535, description="the broker's TLS listener")
    ca_file: Path | None = Field(
        None,
        description="CA certificate the broker's is checked against; default for the local "
        "broker: the one generated on first start (<data_dir>/mosquitto/tls/ca.crt)",
    )

    @property
    def is_local(self) -> bool:
        """True when the broker is on this machine (statestream runs Mosquitto)."""
        return self.host in LOCAL_HOSTS

    @property
    def use_tls(self) -> bool:
        """Whether clients talk TLS to the broker (`tls`, or by default: a local broker)."""
        return self.is_local if self.tls is None else self.tls

    @property
    def client_port(self) -> int:
        """The port clients connect to: the TLS listener when `use_tls`, else `port`."""
        return self.tls_port if self.use_tls else self.port

    @property
    def client_address(self) -> str:
        """host:port as clients reach the broker, for messages."""
        return f"{self.host}:{self.client_port}"


class InfluxSettings(_Section):
    """The InfluxDB 1.x server for history."""

    url: str = "http://localhost:8086"
    username: str = "admin"
    password: SecretStr | None = Field(None, description="generated on first start if unset")
    database: str = "statestream"
    rpc_port: int = Field(8088, ge=1, le=65535, description="backup/restore port of local InfluxDB")

    @field_validator("url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"expected an http:// or https:// URL, got {value!r}")
        return value.rstrip("/")

    @property
    def host(self) -> str:
        """The host name of `url`."""
        netloc = self.url.split("://", 1)[1].split("/", 1)[0]
        return netloc.rpartition(":")[0] if netloc.rpartition(":")[2].isdigit() else netloc

    @property
    def port(self) -> int:
        """The port of `url` (8086 when the URL names none)."""
        netloc = self.url.split("://", 1)[1].split("/", 1)[0]
        port = netloc.rpartition(":")[2]
        return int(port) if port.isdigit() else 8086

    @property
    def is_local(self) -> bool:
        """True when the server is on this machine (statestream runs InfluxDB)."""
        return self.host in LOCAL_HOSTS


class InfluxSinkSettings(_Section):
    """The InfluxDB sink (`statestream run sink-influx`): batches, trigger, waiting out outages."""

    points_per_request: int = Field(10_000, ge=1, description="points per HTTP /write request")
    max_offsets_per_trigger: int | None = Field(
        200_000, ge=1, description="Kafka records per micro-batch (over all four topics)"
    )
    trigger_interval_s: float = Field(1.0, gt=0)
    retry_initial_s: float = Field(0.5, gt=0, description="first wait while InfluxDB is down")
    retry_max_s: float = Field(10.0, gt=0, description="longest wait between two attempts")
    request_timeout_s: float = Field(30.0, gt=0)


class SparkSettings(_Section):
    """How Spark runs: master, checkpoints, parallelism, extra configuration."""

    # local[cores, attempts]: a failed task is tried again, up to 4 times, as on a cluster
    # (spark.task.maxFailures); a plain local[*] fails the query at a task's first failure
    master: str = "local[*,4]"
    app_name: str = "statestream"
    checkpoint_root: Path | None = Field(None, description="default: <data_dir>/checkpoints")
    shuffle_partitions: int = Field(
        2, ge=1, description="partitions of stateful steps (fixed once a checkpoint exists)"
    )
    ui_enabled: bool = False
    log_level: Literal["ALL", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF"] = "WARN"
    driver_memory: str = Field("2g", description="the driver JVM's heap (a size: 512m, 2g)")
    fixed_heap: bool = Field(
        True,
        description="start the driver's JVM, where a local master's tasks run, with all of "
        "driver_memory (-Xms): its heap does not grow through full collections while the first "
        "batches run (the tasks' GC time about a third lower); false: the JVM's default, a "
        "small heap that grows (less memory for small jobs); an -Xms in java_options wins",
    )
    garbage_collector: Literal["parallel", "g1"] = Field(
        "parallel",
        description="the driver's and executors' garbage collector: parallel (no concurrent "
        "GC threads: on 2 cores ~5 % more records/s and ~0.2 s off a 250 k-pair release; "
        "pauses stop all threads) or g1 (Java's default); ignored when java_options chooses one",
    )
    raised_jit_thresholds: bool = Field(
        True,
        description="raise the JVMs' thresholds for compiling a method with C2 (HotSpot's "
        "optimizing compiler) about threefold: on 2 cores C2 otherwise spends a young JVM's "
        "first minutes on lukewarm code, with CPU the tasks need (the pipeline bench: ~8 % more "
        "records/s); false: HotSpot's own; Tier4 flags in java_options win",
    )
    class_archive: bool = Field(
        True,
        description="start the driver's JVM with the class archive `make setup` writes "
        "(AppCDS: Spark's classes mapped, not loaded; a start ~5 s faster on 2 cores) when "
        "it exists for this Java and class path; false: without",
    )
    java_options: str = Field(
        "",
        description="extra options of Spark's driver and executor JVMs; e.g. "
        "-XX:TieredStopAtLevel=1 starts short runs faster but makes long ones slower, and "
        "reserves a 48 MB code cache that many queries fill: add "
        "-XX:ReservedCodeCacheSize=256m (the test suite's choice, both)",
    )
    extra_conf: dict[str, str] = Field(default_factory=dict)
    patches: bool = Field(
        True,
        description="statestream's patches (statestream.spark.patches): the worker daemon, "
        "grouped rows, map state calls, freed memory and local-fs; false: Spark's own, and "
        "malloc's own thresholds",
    )

    @field_validator("driver_memory")
    @classmethod
    def _memory_size(cls, value: str) -> str:
        return memory_size(value)


class TopicsSettings(_Section):
    """Kafka topic names and the configuration `statestream topics create` gives them."""

    machine_data: str = "machine.data"
    machine_out: str = "machine.out"
    dead_letter: str = "machine.deadletter"
    late: str = "machine.late"
    stats: str = "analytics.machine.stats"
    alerts: str = "analytics.machine.alerts"
    vehicle_positions: str = Field(
        "input.vehicle.positions", description="one record per HFP position, key oper/veh"
    )
    vehicle_cells: str = Field(
        "analytics.vehicle.cells", description="per H3 cell and window, from `run geo`"
    )
    vehicle_alerts: str = Field(
        "analytics.vehicle.alerts", description="bunching alerts, one per pair and episode"
    )
    machine_quantities: str = Field(
        "analytics.machine.quantities",
        description="per thing, quantity and window, from `run quantity-stats`",
    )
    vehicle_positions_partitions: int = Field(3, ge=1)
    commits: str = Field(
        "statestream.commits", description="last committed batch of each exactly-once query"
    )
    machine_data_partitions: int = Field(5, ge=1)
    machine_out_partitions: int = Field(3, ge=1)
    other_partitions: int = Field(1, ge=1)
    cleanup_policy: str = Field(
        "delete",
        description="of machine.data and machine.out; compact would keep only the latest "
        "record of each series (their key is thing.quantity) and lose history",
    )
    retention_ms: int = Field(2 * 24 * 3600 * 1000, ge=-1, description="-1: kept for ever")
    retention_bytes: int = Field(-1, ge=-1, description="per partition; -1: no size limit")

    @property
    def series(self) -> tuple[str, ...]:
        """The time-series topics: machine data in and out, vehicle positions."""
        return (self.machine_data, self.machine_out, self.vehicle_positions)

    @property
    def others(self) -> tuple[str, ...]:
        """The topics that are neither time series nor the commits topic."""
        return (
            self.dead_letter,
            self.late,
            self.stats,
            self.alerts,
            self.vehicle_cells,
            self.vehicle_alerts,
            self.machine_quantities,
        )

    @property
    def every(self) -> tuple[str, ...]:
        """Every topic statestream uses."""
        return (*self.series, *self.others, self.commits)


class IngestSettings(_Section):
    """The simulator and the MQTT → Kafka connector (`statestream simulate`, `connect mqtt`)."""

    envelope: Literal["none", "json", "protobuf"] = Field(
        "none",
        description="Kafka value of a record: plain record JSON (none), or the common event "
        "envelope as JSON or protobuf binary; the join job reads the same setting",
    )
    client_id: str = Field(
        "statestream-connector", description="MQTT client id of the connector's persistent session"
    )
    mqtt_client: Literal["statestream", "paho"] = Field(
        "statestream",
        description="the connector's MQTT client: statestream's own (batched packets, one "
        "system call per batch) or paho-mqtt; `bench ingest --client` compares them",
    )
    keepalive_s: int = Field(30, ge=5, le=65535)
    max_payload_bytes: int = Field(
        65_536, ge=1, description="a larger MQTT message goes to the dead-letter topic"
    )
    dead_letter_raw_bytes: int = Field(
        16_384, ge=0, description="bytes of a rejected payload kept in its dead-letter record"
    )
    linger_ms: float = Field(5.0, ge=0, description="Kafka producer linger.ms")
    compression: Literal["none", "gzip", "snappy", "lz4", "zstd"] = "lz4"
    publish_window: int = Field(
        1000, ge=1, le=65535, description="QoS 1/2 messages the simulator has unacknowledged"
    )
    processors: dict[str, Literal["machine", "vehicles"]] | None = Field(
        None,
        description="MQTT topic filter → processor of `connect mqtt` (machine, vehicles); the "
        "connector subscribes to every filter. Default: mqtt.topic → machine, "
        "/hfp/v2/journey/ongoing/vp/# → vehicles",
    )


class JoinSpecSettings(_Section):
    """One join spec for every component C: `{c}` in a quantity name stands for C."""

    left: str = "actSpeed_{c}"
    right: str = "vaTorque_{c}"
    result: str = "vaPower_{c}"
    function: Literal["power", "product", "difference", "ratio"] = "power"
    tolerance: float | None = Field(None, ge=0, description="seconds; pairs farther apart drop")
    disorder: float = Field(0.0, ge=0, description="allowed disorder D of a series, seconds")


class JoinSettings(_Section):
    """The streaming join: its specs, and how Spark runs it."""

    specs: list[JoinSpecSettings] = Field(default_factory=lambda: [JoinSpecSettings()])
    buckets: int = Field(
        8,
        ge=1,
        description="things are grouped into this many buckets "
        "(a multiple of the shuffle partitions spreads them evenly)",
    )
    trigger_interval_s: float = Field(0.1, gt=0, description="seconds between micro-batches")
    max_offsets_per_trigger: int | None = Field(None, ge=1)


class StatsSettings(_Section):
    """The operation statistics: power levels, duty cycle, event-time rules, how Spark runs it."""

    power_quantity: str = Field("vaPower_{c}", description="power series; {c} is the component")
    rated_power_kw: float = Field(20.0, gt=0, description="100 % power level")
    window_s: float = Field(60.0, gt=0, description="tumbling window of the power levels")
    duty_window_s: float = Field(600.0, gt=0, description="sliding window of the duty cycle")
    duty_slide_s: float = Field(60.0, gt=0, description="slide of the duty-cycle window")
    duty_threshold: float = Field(0.8, gt=0, description="share of rated power that counts as on")
    duty_limit: float = Field(0.4, ge=0, le=1, description="alert when the duty cycle exceeds it")
    sampling_interval_s: float = Field(1.0, gt=0, description="time each power record stands for")
    out_of_orderness_s: float = Field(10.0, ge=0, description="watermark = latest time − this")
    allowed_lateness_s: float = Field(60.0, ge=0, description="windows refined this long after")
    buckets: int = Field(8, ge=1, description="things are grouped into this many buckets")
    trigger_interval_s: float = Field(1.0, gt=0)
    max_offsets_per_trigger: int | None = Field(None, ge=1)

    @field_validator("power_quantity")
    @classmethod
    def _has_component(cls, value: str) -> str:
        if "{c}" not in value:
            raise ValueError(f"must contain {{c}} for the component, got {value!r}")
        return value

    @field_validator("duty_slide_s")
    @classmethod
    def _divides_duty_window(cls, value: float, info: ValidationInfo) -> float:
        window = info.data.get("duty_window_s")
        if window is not None and round(window * 1000) % round(value * 1000):
            raise ValueError(f"the duty window ({window} s) must be a whole number of slides")
        return value


class QuantityStatsSettings(_Section):
    """The quantity statistics (`run quantity-stats`): count, min, max, mean and last value of
    every quantity of every thing per tumbling event-time window."""

    window_s: float = Field(60.0, gt=0, description="tumbling window")
    out_of_orderness_s: float = Field(10.0, ge=0, description="watermark = latest time − this")
    allowed_lateness_s: float = Field(60.0, ge=0, description="windows refined this long after")
    buckets: int = Field(8, ge=1, description="things are grouped into this many buckets")
    trigger_interval_s: float = Field(1.0, gt=0)
    max_offsets_per_trigger: int | None = Field(None, ge=1)


class DashboardSettings(_Section):
    """The live web dashboard (`statestream dashboard`): where it listens and who may read it."""

    host: str = "localhost"
    port: int = Field(8050, ge=1, le=65535)
    token: SecretStr | None = Field(
        None, description="required when host is not local; then every request must carry it"
    )
    history_points: int = Field(300, ge=1, le=10_000, description="points per series on page open")
    chart_points: int = Field(600, ge=10, le=10_000, description="points a chart keeps per series")
    tile_url: str = Field(
        "",
        description="base map tiles of /vehicles, e.g. https://tile.openstreetmap.org/{z}/{x}/{y}.png;"
        " empty: no tiles (works offline)",
    )
    tile_attribution: str = Field(
        "",
        validate_default=True,  # unset is an error too when tile_url is set
        description="credit line shown on the map with the tiles; required with tile_url",
    )

    @field_validator("tile_url")
    @classmethod
    def _tile_template(cls, value: str) -> str:
        missing = [part for part in ("{z}", "{x}", "{y}") if part not in value]
        if value and (missing or not value.startswith(("http://", "https://", "/"))):
            raise ValueError(
                "expected an http(s) URL or a /path with {z}, {x} and {y}, e.g. "
                f"https://tile.openstreetmap.org/{{z}}/{{x}}/{{y}}.png; got {value!r}"
            )
        return value

    @field_validator("tile_attribution")
    @classmethod
    def _credit_with_tiles(cls, value: str, info: ValidationInfo) -> str:
        if info.data.get("tile_url") and not value.strip():
            raise ValueError(
                "map tiles need their credit line, e.g. '© OpenStreetMap contributors' "
                "for OpenStreetMap's tiles"
            )
        return value

    @property
    def is_local(self) -> bool:
        """True when the dashboard listens on this machine only."""
        return self.host in LOCAL_HOSTS


class PathsSettings(_Section):
    """Where statestream keeps its data, logs and downloaded jars."""

    data_dir: Path = Field(default_factory=lambda: project_root() / ".statestream")
    jars_dir: Path = Field(default_factory=lambda: project_root() / ".deps" / "jars")
    class_archive_dir: Path = Field(
        default_factory=lambda: project_root() / ".deps" / "class-archive",
        description="the driver JVM's class archives (spark.class_archive)",
    )

    @property
    def log_dir(self) -> Path:
        return self.data_dir / "logs"

    @property
    def secrets_file(self) -> Path:
        return self.data_dir / SECRETS_FILE_NAME
