"""Getting machine data in: machine rows become observations, observations go to Kafka."""

from statestream.ingest.kafka_producer import (
    ProducedFile,
    produce_machine_file,
    produce_observations,
)
from statestream.ingest.observations import (
    SAMPLE_FILE,
    Observation,
    observations_from_row,
    read_machine_rows,
    read_observations,
)

__all__ = [
    "SAMPLE_FILE",
    "Observation",
    "ProducedFile",
    "observations_from_row",
    "produce_machine_file",
    "produce_observations",
    "read_machine_rows",
    "read_observations",
]
