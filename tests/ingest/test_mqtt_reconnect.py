"""The reconnect loop the connector and the recorder share: a lost connection is counted and
connected again with a doubling back-off, a stop while the broker is away ends it cleanly, and a
first connection that fails is not retried."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

import pytest

from statestream.errors import ServiceError
from statestream.ingest.mqtt import ConnectionLost, receive_reconnecting
from statestream.ingest.mqtt.client import MAX_BACKOFF_S

log = logging.getLogger("statestream.test-reconnect")


class _Stop(threading.Event):
    """A stop that records each back-off and is set after `waits` of them (never sleeps)."""

    def __init__(self, waits: int) -> None:
        super().__init__()
        self.waits = waits
        self.backoffs: list[float] = []

    def wait(self, timeout: float | None = None) -> bool:
        assert timeout is not None
        self.backoffs.append(timeout)
        if len(self.backoffs) >= self.waits:
            self.set()
        return self.is_set()


class _Broker:
    """Answers `connect` with each of `answers` in turn: a connection number or an error."""

    def __init__(self, answers: list[int | Exception]) -> None:
        self.answers = answers
        self.received: list[int] = []

    def connect(self) -> int:
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def _run(broker: _Broker, receive: Callable[[int], None], stop: threading.Event) -> list[str]:
    events: list[str] = []
    receive_reconnecting(
        broker.connect,
        receive,
        stop,
        on_lost=lambda: events.append("lost"),
        on_stopped=lambda: events.append("stopped"),
        log=log,
    )
    return events


def test_a_lost_connection_is_counted_and_connected_again_with_back_off(
    caplog: pytest.LogCaptureFixture,
) -> None:
    refused = [ServiceError(f"refused {n}") for n in range(7)]
    broker = _Broker([1, *refused, ConnectionLost("still away"), 2])
    stop = _Stop(waits=99)

    def receive(connection: int) -> None:
        broker.received.append(connection)
        if connection == 1:
            raise ConnectionLost("cut")

    with caplog.at_level(logging.WARNING, logger=log.name):
        events = _run(broker, receive, stop)
    assert broker.received == [1, 2] and events == ["lost"]  # returned: not stopped
    assert stop.backoffs == [1.0, 2.0, 4.0, 8.0, 16.0, MAX_BACKOFF_S, MAX_BACKOFF_S, MAX_BACKOFF_S]
    messages = [r.getMessage() for r in caplog.records if r.name == log.name]
    assert messages[:3] == [
        "cut; reconnecting",
        "refused 0; trying again in 1 s",
        "refused 1; trying again in 2 s",
    ]
    assert messages[-1] == "still away; trying again in 30 s"


def test_the_back_off_starts_again_after_each_connection() -> None:
    broker = _Broker([1, ServiceError("no"), ServiceError("no"), 2, ServiceError("no"), 3])
    stop = _Stop(waits=99)

    def receive(connection: int) -> None:
        if connection < 3:
            raise ConnectionLost("cut")

    assert _run(broker, receive, stop) == ["lost", "lost"]
    assert stop.backoffs == [1.0, 2.0, 1.0]


def test_a_stop_while_the_broker_is_away_ends_after_on_stopped() -> None:
    broker = _Broker([1] + [ServiceError("no")] * 3)
    stop = _Stop(waits=3)

    def receive(_connection: int) -> None:
        raise ConnectionLost("cut")

    assert _run(broker, receive, stop) == ["lost", "stopped"]
    assert stop.backoffs == [1.0, 2.0, 4.0] and broker.answers == []


def test_a_first_connection_that_fails_is_not_retried() -> None:
    broker = _Broker([ServiceError("refused the login"), 1])
    with pytest.raises(ServiceError, match="refused the login"):
        _run(broker, lambda _connection: None, _Stop(waits=99))
    assert broker.answers == [1]


def test_errors_other_than_a_lost_connection_end_it() -> None:
    def receive(_connection: int) -> None:
        raise ServiceError("Kafka failed to take a record")

    with pytest.raises(ServiceError, match="Kafka failed"):
        _run(_Broker([1, 2]), receive, _Stop(waits=99))
    with pytest.raises(ValueError, match="bad"):
        _run(_Broker([1, ValueError("bad")]), _lose, _Stop(waits=99))


def _lose(_connection: int) -> None:
    raise ConnectionLost("cut")
