"""MapState calls sent in windows: the same requests and answers as PySpark's one-by-one calls.

A thread plays the JVM's state server (one request read whole, answered, the next) over a real
socket, with PySpark's own client on the other side.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
from collections.abc import Iterator

import pyspark
import pytest
from pyspark.errors import PySparkRuntimeError
from pyspark.serializers import CPickleSerializer, read_int, write_int
from pyspark.sql.streaming.map_state_client import MapStateClient
from pyspark.sql.streaming.proto import StateMessage_pb2 as messages
from pyspark.sql.streaming.stateful_processor import MapState
from pyspark.sql.streaming.stateful_processor_api_client import StatefulProcessorApiClient
from pyspark.sql.types import LongType, StructField, StructType

from statestream.spark.patches import map_state_calls
from statestream.spark.patches.map_state_calls import MapStateCalls
from statestream.spark.stored_engines import MAP_STATE, StoredEngines
from statestream.testing import InMemoryMapState

NAME, KEY, VALUE = MAP_STATE


class _StateServer:
    """A map state server: requests one after another, each answered before the next is read."""

    def __init__(self, listener: socket.socket, fail_on: bytes | None = None) -> None:
        self.listener = listener
        self.fail_on = fail_on  # a pickled key whose update is refused
        self.data: dict[bytes, bytes] = {}
        self.requests: list[bytes] = []
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()
        _servers.append(self)

    def serve(self) -> None:
        conn, _ = self.listener.accept()
        # ConnectionError: the client closed while answers were still due
        with conn, conn.makefile("rwb") as stream, contextlib.suppress(ConnectionError):
            self.answer_all(stream)

    def answer_all(self, stream) -> None:
        while True:
            try:
                assert read_int(stream) == 0
            except EOFError:  # the client closed its socket
                return
            request = stream.read(read_int(stream))
            self.requests.append(request)
            answer = self.answer(messages.StateRequest.FromString(request))
            body = answer.SerializeToString()
            write_int(len(body), stream)
            stream.write(body)
            stream.flush()

    def answer(self, request: messages.StateRequest) -> messages.StateResponse:
        call = request.stateVariableRequest.mapStateCall
        assert call.stateName == NAME
        if call.HasField("getValue"):
            return messages.StateResponse(statusCode=0, value=self.data.get(call.getValue.userKey))
        update = call.updateValue
        if update.userKey == self.fail_on:
            return messages.StateResponse(statusCode=1, errorMessage="refused")
        self.data[update.userKey] = update.value
        return messages.StateResponse(statusCode=0)


_clients: list[StatefulProcessorApiClient] = []
_servers: list[_StateServer] = []


@pytest.fixture(autouse=True)
def installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The patch as the worker daemon installs it (a test may take it out again)."""
    monkeypatch.setattr(map_state_calls, "_installed", True)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket() as sock:
        sock.bind(("localhost", 0))
        sock.listen(1)
        yield sock
        for client in _clients:  # the server's thread then sees the end of its stream
            client.sockfile.close()
            client._client_socket.close()
        for server in _servers:
            server.thread.join(timeout=10)
        _clients.clear()
        _servers.clear()


def _map_state(listener: socket.socket) -> MapState:
    api = StatefulProcessorApiClient(listener.getsockname()[1], StructType([]))
    _clients.append(api)
    return MapState(MapStateClient(api, KEY, VALUE), NAME)


def _rows(count: int, size: int = 3_000) -> list[tuple[tuple, tuple]]:
    return [((f"thing-{n}",), (os.urandom(size),)) for n in range(count)]


def test_windowed_calls_send_what_one_by_one_calls_send(listener: socket.socket) -> None:
    server = _StateServer(listener)
    state = _map_state(listener)
    rows = _rows(2 * map_state_calls.WINDOW_CALLS + 3)
    for key, value in rows:
        state.updateValue(key, value)
    one_by_one = list(server.requests)
    server.requests.clear()
    calls = MapStateCalls.of(state)
    assert calls is not None
    calls.update_values(rows)
    assert server.requests == one_by_one
    keys = [key for key, _ in rows] + [("no such thing",)]
    expected = [state.getValue(key) for key in keys]
    server.requests.clear()
    got = calls.get_values(keys)
    assert got == expected
    assert got[-1] is None and [tuple(v) for v in got[:-1]] == [value for _, value in rows]
    assert len(server.requests) == len(keys)


def test_reads_are_sent_in_windows_of_bounded_bytes(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(map_state_calls, "WINDOW_BYTES", 200)  # ~4 requests per window
    _StateServer(listener)
    state = _map_state(listener)
    rows = _rows(30, size=10)
    calls = MapStateCalls.of(state)
    calls.update_values(rows)
    assert [tuple(v) for v in calls.get_values([k for k, _ in rows])] == [v for _, v in rows]


def test_an_error_answer_stops_the_calls(listener: socket.socket) -> None:
    rows = _rows(5)
    refused = CPickleSerializer().dumps(rows[2][0])
    server = _StateServer(listener, fail_on=refused)
    calls = MapStateCalls.of(_map_state(listener))
    with pytest.raises(PySparkRuntimeError, match="refused"):
        calls.update_values(rows)
    # the window's later updates were sent before the answer came: harmless, for the error
    # fails the task and a failed task's state store version is never committed
    assert refused not in server.data


def test_plain_rows_are_pickled_as_pyspark_serializes_them(listener: socket.socket) -> None:
    _StateServer(listener)
    calls = MapStateCalls.of(_map_state(listener))
    for schema, row in [(KEY, ("thing-1",)), (VALUE, (b"\x00engines",)), (VALUE, (None,))]:
        assert calls._bytes(schema, row) == calls.api._serialize_to_bytes(schema, row)
    longs = StructType([StructField("n", LongType())])
    assert calls._bytes(longs, (7,)) == calls.api._serialize_to_bytes(longs, (7,))


def test_other_map_states_are_called_one_by_one() -> None:
    memory = InMemoryMapState()
    assert MapStateCalls.of(memory) is None
    stored = StoredEngines(memory)
    stored.prefetch(["a", "b"])  # nothing to do: read on demand
    assert stored.loaded == {}


def test_not_installed_means_one_by_one(
    listener: socket.socket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`spark.patches` off (no worker daemon of ours), or another PySpark: PySpark's own calls."""
    _StateServer(listener)
    state = _map_state(listener)
    monkeypatch.setattr(map_state_calls, "_installed", False)
    assert MapStateCalls.of(state) is None
    monkeypatch.setattr(pyspark, "__version__", "4.2.0")
    assert map_state_calls.install() is False
    assert MapStateCalls.of(state) is None
    monkeypatch.setattr(pyspark, "__version__", "4.1.3")
    assert map_state_calls.install() is True
    assert MapStateCalls.of(state) is not None
