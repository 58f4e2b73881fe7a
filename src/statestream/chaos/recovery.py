"""How long each killed part took to recover: from its kill -9 to the first output it made
possible again, written after it was started again.

A part's output is the topic its recovery shows on first: the connector's and Mosquitto's on
`machine.data` (the connector writes again), the pipeline's, a Kafka broker's and a Spark
worker's on `machine.out` (the join writes again; a record's timestamp is when its task wrote
it), InfluxDB's on the InfluxDB sink's batches (`SinkBatches`: a batch ends only once InfluxDB
took its points, so the first batch with rows that ends after the restart is the first write).
InfluxDB's points carry their event times, not when they were written, so the run watches the
sink's progress reports instead. Every time counts from the kill to the first output written
after the part was started again, so it includes the down time even where the output did not
stall: on a local cluster the other brokers and worker may keep the join writing meanwhile.

    >>> outage = Outage("connector", killed_at=100.0, restarted_at=101.5)
    >>> recovery_times([outage], {"machine_data": [99_000, 100_500, 103_250]})
    {'connector': [3.25]}
"""

from __future__ import annotations

import bisect
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

OUTPUT_OF = {
    "connector": "machine_data",
    "mosquitto": "machine_data",
    "pipeline": "machine_out",
    "kafka": "machine_out",
    "spark-worker": "machine_out",
    "influxdb": "influx_writes",
}
SINK_QUERY = "sink_influx"


@dataclass
class Outage:
    """One kill: of `component`, at `killed_at`, started again at `restarted_at` (wall-clock
    seconds; NaN until then)."""

    component: str
    killed_at: float
    restarted_at: float = math.nan


def recovery_times(
    outages: Sequence[Outage], written_ms: Mapping[str, Sequence[int]]
) -> dict[str, list[float | None]]:
    """Per component, the seconds from each kill to its output's first record written after
    the restart (None: not measured, or nothing written after it)."""
    ordered = {topic: sorted(times) for topic, times in written_ms.items()}
    recovered: dict[str, list[float | None]] = {}
    for outage in outages:
        topic = OUTPUT_OF.get(outage.component)
        times = ordered.get(topic, []) if topic else []
        after = bisect.bisect_right(times, outage.restarted_at * 1000.0)
        seconds = None
        if topic and not math.isnan(outage.restarted_at) and after < len(times):
            seconds = round(times[after] / 1000.0 - outage.killed_at, 3)
        recovered.setdefault(outage.component, []).append(seconds)
    return recovered


@dataclass
class SinkBatches:
    """When the InfluxDB sink's batches that wrote points ended (ms), from its progress reports
    (`<status>/sink_influx.<run>.progress`, the last batch of each run) in the pipeline process
    `pid`, looked at as the run goes (`look`, twice a second): a batch shorter than that may be
    missed, the next one is not.

        >>> import tempfile
        >>> folder = Path(tempfile.mkdtemp())
        >>> report = {"batchId": 4, "numInputRows": 9, "timestamp": "2026-01-01T00:00:01.000Z",
        ...           "durationMs": {"triggerExecution": 250}}
        >>> _ = (folder / "sink_influx.r1.progress").write_text(json.dumps({"progress": report}))
        >>> _ = (folder / "sink_influx.r1.json").write_text(json.dumps({"pid": 7}))
        >>> batches = SinkBatches(folder)
        >>> batches.look(pid=7); batches.look(pid=7); batches.look(pid=8)
        >>> batches.ended_ms
        [1767225601250]
    """

    folder: Path
    ended_ms: list[int] = field(default_factory=list)
    _seen: set[tuple[str, int]] = field(default_factory=set)

    def look(self, pid: int | None) -> None:
        for path in self.folder.glob(f"{SINK_QUERY}.*.progress"):
            try:
                if json.loads(path.with_suffix(".json").read_bytes()).get("pid") != pid:
                    continue  # another process's sink
                progress = json.loads(path.read_bytes())["progress"]
                seen = (path.name, int(progress["batchId"]))
                if seen in self._seen or not progress.get("numInputRows"):
                    continue
                started = datetime.fromisoformat(progress["timestamp"].replace("Z", "+00:00"))
                took_ms = (progress.get("durationMs") or {}).get("triggerExecution", 0)
            except (OSError, ValueError, KeyError, TypeError):
                continue  # being replaced, or not written yet
            self._seen.add(seen)
            self.ended_ms.append(round(started.timestamp() * 1000) + int(took_ms))
