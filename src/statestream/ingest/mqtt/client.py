"""One TCP connection to an MQTT 3.1.1 broker, for a publisher and for a subscriber.

statestream speaks the few packets it needs itself (`wire`) rather than through paho-mqtt: paho
makes one system call per packet and builds several Python objects per message, which keeps
it far below the 20 k rows/s the connector must carry (`statestream bench ingest` compares the
two; docs/benchmarks). Here a batch of PUBLISH or PUBACK packets is one `sendall`, and one
`recv` of up to 256 KiB is cut into packets in memory.

With `mqtt.use_tls` (by default for the local broker) the connection is TLS, the broker's
certificate verified against `mqtt.ca_file` and its host name.
"""

from __future__ import annotations

import logging
import select
import socket
import ssl
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from statestream.config import MqttSettings
from statestream.errors import ServiceError
from statestream.ingest.mqtt import wire

RECEIVE_BYTES = 256 * 1024
MAX_BACKOFF_S = 30.0  # the longest wait between two attempts to reconnect

_Connection = TypeVar("_Connection")


class ConnectionLost(ServiceError):
    """The broker closed the connection or stopped answering."""


class MqttConnection:
    """A connection with a client id; `clean_session=False` keeps the session across connects.

    With a persistent session the broker keeps the subscription and queues QoS 1/2 messages
    while the client is away, and sends again those it delivered without an acknowledgement.
    """

    def __init__(
        self,
        settings: MqttSettings,
        client_id: str,
        *,
        clean_session: bool,
        keepalive_s: int = 30,
    ) -> None:
        self.settings = settings
        self.client_id = client_id
        self.clean_session = clean_session
        self.keepalive_s = keepalive_s
        self.session_present = False
        self._sock: socket.socket | None = None
        self._reader = wire.PacketReader()
        self._last_sent = time.monotonic()
        self._ping_sent_at: float | None = None
        self._pending: list[wire.Packet] = []

    @property
    def address(self) -> str:
        return self.settings.client_address

    def connect(self, timeout_s: float = 10.0) -> bool:
        """Open the connection and log in; True when the broker still had this client's session.

        Raises `ServiceError` naming the broker and the reason when it is unreachable or refuses.
        """
        settings = self.settings
        context = tls_context(settings) if settings.use_tls else None
        try:
            sock = socket.create_connection((settings.host, settings.client_port), timeout_s)
            if context is not None:
                sock = context.wrap_socket(sock, server_hostname=settings.host)
        except ssl.SSLCertVerificationError as exc:
            raise ServiceError(
                f"the MQTT broker at {self.address} failed TLS verification against "
                f"{settings.ca_file or 'the system CAs'}: {exc.verify_message}"
            ) from None
        except OSError as exc:
            raise ServiceError(f"cannot reach the MQTT broker at {self.address}: {exc}") from None
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.settimeout(self.keepalive_s)  # a broker that takes no data for that long is gone
        self._sock = sock
        password = self.settings.password.get_secret_value() if self.settings.password else None
        self.send(
            wire.connect_packet(
                self.client_id,
                username=self.settings.username or None,
                password=password,
                clean_session=self.clean_session,
                keepalive_s=self.keepalive_s,
            )
        )
        connack = self._wait_for(wire.CONNACK, timeout_s)
        code = connack.body[1] if len(connack.body) > 1 else 255
        if code != 0:
            self.close(graceful=False)
            reason = wire.CONNACK_REASONS.get(code, f"return code {code}")
            raise ServiceError(f"the MQTT broker at {self.address} refused the login: {reason}")
        self.session_present = bool(connack.body[0] & 1)
        return self.session_present

    def subscribe(self, topic: str, qos: int, timeout_s: float = 10.0) -> None:
        """Subscribe to `topic` at `qos`; messages arriving meanwhile are kept for `receive`."""
        self.send(wire.subscribe_packet(1, topic, qos))
        suback = self._wait_for(wire.SUBACK, timeout_s)
        if suback.body[2:3] == b"\x80":
            raise ServiceError(
                f"the MQTT broker at {self.address} refused the subscription {topic}"
            )

    def send(self, data: bytes) -> None:
        """Send bytes (one or many packets); `ConnectionLost` when the socket is gone."""
        if self._sock is None:
            raise ConnectionLost(f"not connected to the MQTT broker at {self.address}")
        try:
            self._sock.sendall(data)
        except OSError as exc:
            self.close(graceful=False)
            raise ConnectionLost(f"lost the MQTT broker at {self.address}: {exc}") from None
        self._last_sent = time.monotonic()

    def acknowledge(self, packet_ids: list[int]) -> None:
        """PUBACK these QoS 1 messages, in this order, in one `send`."""
        if packet_ids:
            self.send(wire.puback_packets(packet_ids))

    def receive(self, timeout_s: float) -> list[wire.Packet]:
        """The packets that arrive within `timeout_s` (none when nothing came); answers pings."""
        sock = self._sock
        if sock is None:
            raise ConnectionLost(f"not connected to the MQTT broker at {self.address}")
        packets, self._pending = self._pending, []
        readable = _tls_pending(sock) > 0
        if not readable:
            readable = bool(select.select([sock], [], [], 0.0 if packets else timeout_s)[0])
        if readable:
            error: OSError | None = None
            try:
                data = _receive_bytes(sock)
            except OSError as exc:
                data, error = b"", exc
            if not data:
                self.close(graceful=False)
                raise ConnectionLost(
                    f"the MQTT broker at {self.address} closed the connection"
                    + (f": {error}" if error else "")
                )
            packets += self._reader.feed(data)
            if any(packet.kind == wire.PINGRESP for packet in packets):
                self._ping_sent_at = None
                packets = [packet for packet in packets if packet.kind != wire.PINGRESP]
        self.keep_alive()
        return packets

    def keep_alive(self) -> None:
        """Send PINGREQ when nothing was sent for half the keep-alive; fail when none answers."""
        now = time.monotonic()
        if self._ping_sent_at is not None and now - self._ping_sent_at > self.keepalive_s:
            self.close(graceful=False)
            raise ConnectionLost(f"the MQTT broker at {self.address} stopped answering pings")
        if self._ping_sent_at is None and now - self._last_sent > self.keepalive_s / 2:
            self.send(wire.PINGREQ_PACKET)
            self._ping_sent_at = now

    def close(self, *, graceful: bool = True) -> None:
        """Close the connection; `graceful` sends DISCONNECT first (a persistent session stays)."""
        sock, self._sock = self._sock, None
        if sock is None:
            return
        try:
            if graceful:
                sock.sendall(wire.DISCONNECT_PACKET)
        except OSError:
            pass
        finally:
            sock.close()
        self._reader = wire.PacketReader()
        self._pending = []

    def _wait_for(self, kind: int, timeout_s: float) -> wire.Packet:
        """The next packet of `kind`; the others that arrive meanwhile are kept for `receive`."""
        deadline = time.monotonic() + timeout_s
        kept: list[wire.Packet] = []
        while (left := deadline - time.monotonic()) > 0:
            packets = self.receive(min(left, 1.0))
            for index, packet in enumerate(packets):
                if packet.kind == kind:
                    self._pending = kept + packets[:index] + packets[index + 1 :]
                    return packet
            kept += packets
        self.close(graceful=False)
        raise ServiceError(f"the MQTT broker at {self.address} did not answer within {timeout_s} s")


def tls_context(settings: MqttSettings) -> ssl.SSLContext:
    """A client TLS context that verifies the broker against `ca_file` (else the system CAs)."""
    ca_file = settings.ca_file
    if ca_file is not None and not ca_file.is_file():
        maker = " (`statestream services up` makes it)" if settings.is_local else ""
        raise ServiceError(
            f"the MQTT CA file {ca_file} does not exist{maker}; "
            "set mqtt.ca_file, or mqtt.tls = false for a broker without TLS"
        )
    return ssl.create_default_context(cafile=str(ca_file) if ca_file else None)


def _tls_pending(sock: socket.socket) -> int:
    """Bytes a TLS socket has decrypted already (select does not see them)."""
    return sock.pending() if isinstance(sock, ssl.SSLSocket) else 0


def _receive_bytes(sock: socket.socket) -> bytes:
    """One `recv`; on TLS, every record already at hand too (a TLS `recv` returns one record,
    and records OpenSSL has read ahead are invisible to `select`)."""
    data = sock.recv(RECEIVE_BYTES)
    if not data or not isinstance(sock, ssl.SSLSocket):
        return data
    chunks, size, timeout = [data], len(data), sock.gettimeout()
    sock.settimeout(0.0)
    try:
        while size < RECEIVE_BYTES:
            try:
                more = sock.recv(RECEIVE_BYTES - size)
            except (ssl.SSLWantReadError, BlockingIOError):
                break
            if not more:
                break
            chunks.append(more)
            size += len(more)
    finally:
        sock.settimeout(timeout)
    return b"".join(chunks)


def receive_reconnecting(
    connect: Callable[[], _Connection],
    receive: Callable[[_Connection], None],
    stop: threading.Event,
    *,
    on_lost: Callable[[], None],
    on_stopped: Callable[[], object],
    log: logging.Logger,
) -> None:
    """`receive` on a `connect`ed connection until it returns; on `ConnectionLost`, call
    `on_lost` and connect again, waiting 1 s after a failed attempt, twice as long after each
    further one (at most `MAX_BACKOFF_S`), until `stop` is set: then call `on_stopped`.

    The first `connect` is not retried: a refused login or no broker at all raises its
    `ServiceError` here. Warnings go to the caller's `log`.
    """
    connection = connect()
    backoff = 1.0
    while True:
        try:
            receive(connection)
            return
        except ConnectionLost as exc:
            on_lost()
            log.warning("%s; reconnecting", exc)
        while not stop.is_set():
            try:
                connection = connect()
                backoff = 1.0
                break
            except ServiceError as exc:
                log.warning("%s; trying again in %.0f s", exc, backoff)
                stop.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)
        else:
            on_stopped()
            return


def forget_session(settings: MqttSettings, client_id: str) -> None:
    """Remove a persistent session (and the messages queued for it) from the broker."""
    connection = MqttConnection(settings, client_id, clean_session=True)
    connection.connect()
    connection.close()
