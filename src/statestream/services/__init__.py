"""The services statestream runs as plain processes (Kafka, Mosquitto, InfluxDB), and its topics."""

from statestream.services.base import LocalService
from statestream.services.stack import (
    ServiceStatus,
    local_services,
    service_statuses,
    start_services,
    stop_services,
)

__all__ = [
    "LocalService",
    "ServiceStatus",
    "local_services",
    "service_statuses",
    "start_services",
    "stop_services",
]
