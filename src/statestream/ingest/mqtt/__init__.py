"""MQTT 3.1.1 for the simulator and the connector: packets (`wire`) and one connection."""

from statestream.ingest.mqtt.client import (
    ConnectionLost,
    MqttConnection,
    forget_session,
    receive_reconnecting,
)

__all__ = ["ConnectionLost", "MqttConnection", "forget_session", "receive_reconnecting"]
