"""Many `getValue`/`updateValue` calls of a PySpark MapState, their requests sent in windows.

PySpark's MapState sends one request to the JVM's state server and waits for its answer before
the next (`pyspark.sql.streaming.map_state_client`): a call that reads and writes many things
waits twice per thing for the server's thread to wake and answer and for the Python worker to
wake again. The server reads requests one after another from its socket and answers each in
turn (`TransformWithStateInPySparkStateServer.run`, which reads each request whole with
`readFully`), so the same requests can be written back to back and their answers read
afterwards: the same calls in the same order, without the waits.

The windows keep either direction's socket buffer from filling while the other side waits on
it: a window of reads sends at most `WINDOW_BYTES` of (small) requests before reading their
(large) answers, a window of writes reads the tiny answers of at most `WINDOW_CALLS` requests.
An answer with an error stops the calls at once (the server may stop answering after it).

This leans on PySpark's private client (`_mapStateClient`, its `_stateful_processor_api_client`),
so it is a patch: the worker daemon installs it (`python_daemon`, on while `spark.patches` is)
on the PySpark it was written for (`tests/spark/patches/test_map_state_calls.py` checks that
the requests are the same as PySpark's own). `MapStateCalls.of` gives None where it is not
installed and for any other MapState (the tests' in-memory ones), and the callers then make the
calls one by one. An error answer fails the task, whose state store version is then not
committed, whatever else the window had sent.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pyspark.errors import PySparkRuntimeError
from pyspark.serializers import read_int, write_int
from pyspark.sql.types import StructType

NAME = "map_state_calls"
WRITTEN_FOR = "4.1."  # the state server's protocol and PySpark's private client it speaks
_PLAIN = (str, bytes)
_installed = False  # by `install`, in the worker daemon (and so in the workers it forks)
WINDOW_CALLS = 256  # requests sent before their answers are read
WINDOW_BYTES = 32 * 1024  # at most this much of requests in one window of reads


def applies() -> str | None:
    """None when this PySpark is the one whose state client this speaks for, else why not."""
    from statestream.spark.patches._checks import unsupported

    return unsupported(WRITTEN_FOR)


def install() -> bool:
    """Let `MapStateCalls.of` send windows in this process (and those it forks); False if not
    this PySpark."""
    global _installed
    _installed = applies() is None
    return _installed


class MapStateCalls:
    """`get_values` and `update_values` of one PySpark MapState, requests sent in windows."""

    def __init__(self, client: Any, state_name: str) -> None:  # a MapStateClient
        self.api = client._stateful_processor_api_client
        self.key_schema = client.user_key_schema
        self.value_schema = client.value_schema
        self.state_name = state_name

    @classmethod
    def of(cls, state: Any) -> MapStateCalls | None:
        """The calls of `state`, if the patch is installed and `state` is PySpark's own MapState
        (else None)."""
        if not _installed:
            return None
        client = getattr(state, "_mapStateClient", None)
        api = getattr(client, "_stateful_processor_api_client", None)
        if api is None or not hasattr(api, "sockfile"):
            return None
        return cls(client, state._stateName)

    def get_values(self, keys: Sequence[tuple]) -> list[tuple | None]:
        """`getValue` of each of `keys`, in order."""
        from pyspark.sql.streaming.proto import StateMessage_pb2 as messages

        values: list[tuple | None] = []
        start = 0
        while start < len(keys):
            sent, size = 0, 0
            while start + sent < len(keys) and sent < WINDOW_CALLS and size < WINDOW_BYTES:
                key = self._bytes(self.key_schema, keys[start + sent])
                call = messages.MapStateCall(
                    stateName=self.state_name, getValue=messages.GetValue(userKey=key)
                )
                size += self._write(call)
                sent += 1
            self.api.sockfile.flush()
            values += [self._value(self._answer("getting value")) for _ in range(sent)]
            start += sent
        return values

    def update_values(self, items: Iterable[tuple[tuple, tuple]]) -> None:
        """`updateValue(key, value)` of each of `items`, in order."""
        from pyspark.sql.streaming.proto import StateMessage_pb2 as messages

        sent = 0
        for key, value in items:
            update = messages.UpdateValue(
                userKey=self._bytes(self.key_schema, key),
                value=self._bytes(self.value_schema, value),
            )
            self._write(messages.MapStateCall(stateName=self.state_name, updateValue=update))
            sent += 1
            if sent == WINDOW_CALLS:
                self._answers(sent)
                sent = 0
        self._answers(sent)

    def _bytes(self, schema: StructType, row: tuple) -> bytes:
        """`row` as PySpark sends it (`_serialize_to_bytes`: the pickled `schema.toInternal`).

        Rows of plain `str`/`bytes` values of a schema none of whose fields converts are their
        own internal form: pickled at once, without building a `Row` each time.
        """
        if not schema._needSerializeAnyField and all(type(v) in _PLAIN for v in row):
            return self.api.pickleSer.dumps(tuple(row))
        return self.api._serialize_to_bytes(schema, row)

    def _write(self, call: Any) -> int:
        """Write one request (not flushed); its size in bytes."""
        from pyspark.sql.streaming.proto import StateMessage_pb2 as messages

        request = messages.StateRequest(
            stateVariableRequest=messages.StateVariableRequest(mapStateCall=call)
        ).SerializeToString()
        write_int(0, self.api.sockfile)  # the message version, as PySpark writes it
        write_int(len(request), self.api.sockfile)
        self.api.sockfile.write(request)
        return len(request) + 8

    def _answers(self, count: int) -> None:
        """Flush the window's requests and read their `count` answers."""
        self.api.sockfile.flush()
        for _ in range(count):
            self._answer("updating map state value")

    def _answer(self, doing: str) -> Any:
        """One answer (a `StateResponse`); an error status raises at once."""
        from pyspark.sql.streaming.proto import StateMessage_pb2 as messages

        answer = messages.StateResponse()
        answer.ParseFromString(self.api.sockfile.read(read_int(self.api.sockfile)))
        if answer.statusCode != 0:
            raise PySparkRuntimeError(f"Error {doing}: {answer.errorMessage}")
        return answer

    def _value(self, answer: Any) -> tuple | None:
        if len(answer.value) == 0:
            return None
        return self.api._deserialize_from_bytes(answer.value)
