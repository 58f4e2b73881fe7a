"""Recording a live MQTT feed and replaying it with its own timing (`statestream record mqtt`,
`statestream replay`).

- `lines`: one message per line, `<receive time> <topic> <payload>` (HSL's HFP dump format).
- `writer`, `reader`: a recording's numbered parts, durable, rotated and gzipped; read back.
- `schedule`: when each message is due again (speed, loop) and how well a replay kept to it.
- `adjust`: event times shifted and things renamed, for the two use cases' payloads.
- `recorder`, `replayer`, `copies`: the I/O around them (MQTT in; MQTT or Kafka out; copies
  side by side in processes).
"""

from statestream.ingest.recording.adjust import ReplayAdjuster, adjusted
from statestream.ingest.recording.copies import run_replay
from statestream.ingest.recording.lines import (
    RecordedMessage,
    RecordingFormatError,
    format_line,
    parse_line,
)
from statestream.ingest.recording.reader import RecordingReader, recording_files
from statestream.ingest.recording.recorder import MqttRecorder, RecorderCounts, recorder_client_id
from statestream.ingest.recording.replayer import ReplayPlan, ReplayResult, replay_one
from statestream.ingest.recording.schedule import (
    LagStats,
    PaceFigures,
    PaceNotHeld,
    PaceTracker,
    TimedMessage,
    schedule,
)
from statestream.ingest.recording.writer import RecordingWriter, Rotation, recording_parts

__all__ = [
    "LagStats",
    "MqttRecorder",
    "PaceFigures",
    "PaceNotHeld",
    "PaceTracker",
    "RecordedMessage",
    "RecorderCounts",
    "RecordingFormatError",
    "RecordingReader",
    "RecordingWriter",
    "ReplayAdjuster",
    "ReplayPlan",
    "ReplayResult",
    "Rotation",
    "TimedMessage",
    "adjusted",
    "format_line",
    "parse_line",
    "recorder_client_id",
    "recording_files",
    "recording_parts",
    "replay_one",
    "run_replay",
    "schedule",
]
