"""`statestream connect mqtt --instances N`: N connector processes in one MQTT shared subscription,
started, watched and stopped by one parent.

Each instance is `statestream connect mqtt` in a process of its own, with a persistent session of
its own (client id `<client_id>-<i>`), subscribed to `$share/<group>/<filter>` for each topic
filter; the broker hands each message to one member of the group (Mosquitto does so for MQTT
3.1.1 clients too, round-robin). The parent restarts an instance that ends, with back-off, counts
and prints each restart, forwards SIGINT/SIGTERM, and gives up, stopping the others and exiting
non-zero, when one instance keeps ending soon after its start.

**Why every message reaches Kafka at least once.** An instance acknowledges a message only once
Kafka has confirmed its records (`MqttConnector`), so the question is what becomes of the
messages the broker gave an instance that is killed. MQTT 5 lets a broker either send them to
another member or keep them for that member (the server MAY wait for it to reconnect). Mosquitto
(2.0 here) keeps them: it picks the member for each message round-robin over every session
subscribed to the group, connected or not (`subs__shared_process` in its `subs.c`), and what it
gave a session stays in that session (in flight if it was sent and not acknowledged, queued if
the client was away) until that client id connects again; it never moves a message to another
member (eclipse/mosquitto#1747: with persistent sessions the one member left of two gets half
the messages; #2662: with clean sessions the messages in flight to a member that goes away are
lost). Hence:

- every instance has a persistent session (clean session off), so nothing given to it is dropped
  when it dies, and the parent starts a dead instance again *with the same client id*: the broker
  then sends it again what it had not acknowledged and what queued meanwhile (duplicates
  possible, loss not: as with one connector, `mqtt.max_queued_messages = 0` so no queue is cut);
- the parent never leaves one instance down while the others run: it restarts it, and when it
  keeps failing the whole group stops with an error; the sessions keep their messages until the
  group is started again;
- a group started with fewer instances than it had before is refused
  (`check_no_retired_member`): the session `<client_id>-<N+1>` would go on getting its share of
  the messages and no instance would forward them;
- a client id that once subscribed without `$share` keeps that subscription in its session, so
  the instances' ids (`<client_id>-<i>`) are never the single connector's (`<client_id>`): the
  two modes never share a session. Switching from one mode to the other loses nothing: the
  other mode's session keeps its subscription and queues every message (duplicates if it is
  started again; remove a session that is done with, `forget_session`, or it grows).

Records of one key may reach Kafka out of order now: the instances write independently. The
join's pairs do not depend on arrival order; the windowed queries judge a record against their
watermark (`out_of_orderness_s`), so an instance far behind the others (a restarted one with its
redelivered messages) can make records late, as any out-of-order source can.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from statestream.config import Settings, settings_environment
from statestream.errors import InputError, ServiceError
from statestream.ingest.connector_instance import CLEAN_STOPS, ConnectorInstance, exit_text
from statestream.ingest.mqtt import MqttConnection, forget_session
from statestream.ingest.mqtt_connector import NOT_IN_SHARE_GROUP_NAMES, check_share_group

MAX_INSTANCES = 32  # instances of one group
RESTART_BACKOFF_S = 1.0  # the first restart of an instance; doubled for each quick end in a row
MAX_BACKOFF_S = 30.0
STABLE_AFTER_S = 30.0  # an instance that ran this long before it ended starts its count afresh
GIVE_UP_AFTER = 5  # quick ends in a row of one instance before the group gives up
STOP_TIMEOUT_S = 60.0  # for the instances to flush and acknowledge after SIGTERM
POLL_S = 0.2


def member_client_id(client_id: str, index: int) -> str:
    """The client id of instance `index` (from 1) of a group whose base client id is
    `client_id`, never the single connector's own.

    >>> member_client_id("statestream-connector", 2)
    'statestream-connector-2'
    """
    return f"{client_id}-{index}"


def default_share_group(client_id: str) -> str:
    """The share group of a group of connectors by default: the base client id, with the
    characters a share group's name cannot hold replaced.

    >>> default_share_group("plant/connector")
    'plant_connector'
    """
    group = client_id
    for char in NOT_IN_SHARE_GROUP_NAMES:
        group = group.replace(char, "_")
    return group


def check_no_retired_member(settings: Settings, client_id: str, instances: int) -> None:
    """Refuse to start `instances` when the broker holds the session of instance `instances + 1`
    of an earlier, larger group of the same client ids: it still gets its share of the messages
    and no instance would forward them. Raises `InputError` saying what to do.

    Asks the broker by logging in as that instance (a session that was not there is removed
    again; messages the broker sends meanwhile stay unacknowledged in the session).
    """
    retired = member_client_id(client_id, instances + 1)
    connection = MqttConnection(settings.mqtt, retired, clean_session=False)
    present = connection.connect()
    connection.close()
    if not present:
        forget_session(settings.mqtt, retired)
        return
    raise InputError(
        f"the MQTT session {retired} of an earlier group with more instances is on the broker: "
        f"it still gets its share of the group's messages and no instance of {instances} would "
        f"forward them; start --instances {instances + 1} or more, or run fewer instances under "
        "a new --client-id (docs: how-to/ingest, Connectors in parallel)"
    )


def _instances(count: int) -> str:
    return "1 instance" if count == 1 else f"{count} instances"


@dataclass(frozen=True)
class GroupOptions:
    instances: int
    group: str  # the share group
    client_id: str  # the base: instance i is member_client_id(client_id, i)
    report_every: float = 10.0


@dataclass(frozen=True)
class GroupReport:
    """What the group did: per instance its runs' figures, restarts and how it ended."""

    options: GroupOptions
    instances: list[ConnectorInstance]
    seconds: float

    def total(self, name: str) -> int:
        return sum(run.get(name, 0) for instance in self.instances for run in instance.figures)

    @property
    def restarts(self) -> int:
        return sum(max(instance.starts - 1, 0) for instance in self.instances)

    @property
    def failed(self) -> list[ConnectorInstance]:
        """The instances that did not end cleanly when the group stopped them."""
        return [i for i in self.instances if i.stop_code not in (None, *CLEAN_STOPS)]

    def check_stopped_cleanly(self) -> None:
        """`ServiceError` naming the instances that did not end cleanly when stopped."""
        if self.failed:
            raise ServiceError(
                "; ".join(
                    f"{i.name} did not stop cleanly ({exit_text(i.stop_code or 0)}): "
                    f"{i.error_line()}"
                    for i in self.failed
                )
            )

    def summary(self) -> str:
        events = self.total("events")
        rate = events / self.seconds if self.seconds > 0 else 0.0
        each = ", ".join(
            f"{i.name} {sum(run.get('events', 0) for run in i.figures):,}" for i in self.instances
        )
        line = (
            f"{_instances(len(self.instances))} in share group {self.options.group}: "
            f"{events:,} events → {self.total('records'):,} records, "
            f"{self.total('dead_letters'):,} dead letters in {self.seconds:.1f} s "
            f"({rate:,.0f} events/s; {each})"
        )
        ends = [f"{i.name} {', '.join(i.ends)}" for i in self.instances if i.ends]
        if ends:
            line += (
                f"; restarts: {self.restarts} ({'; '.join(ends)}; what those runs forwarded "
                "is not in the counts)"
            )
        return line


def run_connector_group(
    settings: Settings, options: GroupOptions, stop: threading.Event, say: Callable[[str], None]
) -> GroupReport:
    """`connect mqtt --instances N`: check the share group's name and that no larger group left
    a session behind (`check_no_retired_member`), then run the group until `stop` is set."""
    check_share_group(options.group)
    check_no_retired_member(settings, options.client_id, options.instances)
    return ConnectorGroup(settings, options, say).run(stop)


class ConnectorGroup:
    """Runs `options.instances` instances of `connect mqtt` in share group `options.group`
    until `stop` is set; `say` prints a line (the instances' lines come prefixed with their name).

    `command` is what runs `statestream` (`python -m statestream` by default).
    """

    def __init__(
        self,
        settings: Settings,
        options: GroupOptions,
        say: Callable[[str], None],
        command: Sequence[str] = (sys.executable, "-m", "statestream"),
    ) -> None:
        self.options = options
        self.say = say
        self._lock = threading.Lock()
        self._held: list[str] | None = []  # the instances' lines until all have subscribed
        environment = {
            **{k: v for k, v in os.environ.items() if not k.startswith("STATESTREAM_")},
            **settings_environment(settings),
            "COLUMNS": "200",
        }
        self.instances = [
            ConnectorInstance(index, self._argv(command, index), environment, self._echo)
            for index in range(1, options.instances + 1)
        ]

    def run(self, stop: threading.Event) -> GroupReport:
        """Start the instances, restart those that end, stop them all once `stop` is set.

        Raises `ServiceError` when an instance ends before it first subscribed (with its error)
        or keeps ending soon after its start; the others are stopped first.
        """
        started = time.monotonic()
        try:
            for instance in self.instances:
                instance.start()
            if self._wait_until_subscribed(stop):
                self._supervise(stop)
        finally:
            self._stop_all()
        return GroupReport(self.options, self.instances, time.monotonic() - started)

    def _argv(self, command: Sequence[str], index: int) -> list[str]:
        client_id = member_client_id(self.options.client_id, index)
        return [
            *command, "connect", "mqtt", "--member-of", self.options.group,
            "--client-id", client_id, "--report-every", f"{self.options.report_every:g}",
        ]  # fmt: skip

    def _echo(self, instance: ConnectorInstance, line: str) -> None:
        text = f"{instance.name}: {line}"
        with self._lock:
            if self._held is not None:
                self._held.append(text)
                return
        self.say(text)

    def _release_held(self, but: str | None = None) -> None:
        """Say the lines held back until all subscribed (`but` that one: the error raised)."""
        with self._lock:
            held, self._held = self._held or [], None
        for text in held:
            if text != but:
                self.say(text)

    def _wait_until_subscribed(self, stop: threading.Event) -> bool:
        """True once every instance has subscribed, False when `stop` came first."""
        while not all(instance.ready.is_set() for instance in self.instances):
            for instance in self.instances:
                code = instance.poll()
                if code is not None and not instance.ready.is_set():
                    error = instance.last_lines[-1] if instance.last_lines else ""
                    one_line = error.startswith("error: ")  # said once, by the error raised
                    self._release_held(but=f"{instance.name}: {error}" if one_line else None)
                    raise ServiceError(
                        f"{instance.name} ended ({exit_text(code)}) before it subscribed: "
                        f"{instance.error_line()}"
                    )
            if stop.wait(POLL_S):
                self._release_held()
                return False
        self._release_held()
        options = self.options
        self.say(
            f"{'all ' if options.instances > 1 else ''}{_instances(options.instances)} "
            f"subscribed in share group {options.group} "
            f"(client ids {member_client_id(options.client_id, 1)} … "
            f"{member_client_id(options.client_id, options.instances)})"
        )
        return True

    def _supervise(self, stop: threading.Event) -> None:
        while not stop.wait(POLL_S):
            now = time.monotonic()
            for instance in self.instances:
                if instance.restart_at is not None:
                    if now >= instance.restart_at:
                        instance.start()
                        self.say(f"{instance.name}: started again (restart {instance.starts - 1})")
                    continue
                code = instance.poll()
                if code is not None:
                    self._schedule_restart(instance, code, now)

    def _schedule_restart(self, instance: ConnectorInstance, code: int, now: float) -> None:
        ran = now - instance.started_at
        instance.quick_ends = instance.quick_ends + 1 if ran < STABLE_AFTER_S else 1
        instance.ends.append(exit_text(code))
        if instance.quick_ends >= GIVE_UP_AFTER:
            raise ServiceError(
                f"{instance.name} ended {instance.quick_ends} times in a row within "
                f"{STABLE_AFTER_S:.0f} s of its start (last: {exit_text(code)}: "
                f"{instance.error_line()}); the group stops, the sessions keep their messages"
            )
        backoff = min(RESTART_BACKOFF_S * 2 ** (instance.quick_ends - 1), MAX_BACKOFF_S)
        instance.restart_at = now + backoff
        self.say(
            f"{instance.name}: ended ({exit_text(code)}) after {ran:.1f} s; starting it again "
            f"in {backoff:.0f} s with the same session"
        )

    def _stop_all(self) -> None:
        """SIGTERM to each running instance (it flushes and acknowledges), SIGKILL after
        STOP_TIMEOUT_S; an instance waiting for its restart is not started again."""
        running = [i for i in self.instances if i.process is not None and i.restart_at is None]
        for instance in running:
            instance.signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        for instance in running:
            assert instance.process is not None
            try:
                instance.process.wait(max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                self.say(f"{instance.name}: did not stop within {STOP_TIMEOUT_S:.0f} s; killed")
                instance.signal(signal.SIGKILL)
                instance.process.wait(10)
            instance.stop_code = instance.poll()
        self._release_held()
