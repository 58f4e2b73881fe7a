"""Replays side by side: `copies` processes, each replaying the whole recording as its own copy.

Each copy is a process of its own (a core of its own where there is one), started fresh
(`spawn`), with its own MQTT connection or Kafka producer. The copies wait for each other
before their first message, so they start together; each keeps its own pace and figures, which
the parent adds up. Ctrl-C or SIGTERM of the parent stops every copy cleanly (the copies
themselves ignore Ctrl-C, which the terminal sends to all).
"""

from __future__ import annotations

import multiprocessing
import queue
import signal
import threading
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.sharedctypes import Synchronized, SynchronizedArray

from statestream.config import Settings
from statestream.errors import ServiceError, StatestreamError
from statestream.ingest.recording.replayer import ReplayPlan, ReplayResult, replay_one

START_TIMEOUT_S = 120.0  # how long a copy waits for the others before its first message
PROGRESS_EVERY_S = 0.25
POLL_S = 0.05  # how often a copy looks at the parent's stop
STOP, ABORT = 0, 1  # the parent's flags
NOT_STARTED = "did not start: another copy failed first, or the others did not come"


def run_replay(
    settings: Settings,
    plan: ReplayPlan,
    *,
    stop: threading.Event,
    on_progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """Replay the plan: in this process with one copy, else in `plan.copies` processes."""
    if plan.copies < 1:
        raise ValueError(f"copies is 1 or more, not {plan.copies}")
    if plan.copies == 1:
        return replay_one(settings, plan, 0, stop=stop, on_progress=on_progress)
    return replay_copies(settings, plan, stop=stop, on_progress=on_progress)


def replay_copies(
    settings: Settings,
    plan: ReplayPlan,
    *,
    stop: threading.Event,
    on_progress: Callable[[int], None] | None = None,
) -> ReplayResult:
    """The plan's copies as processes; their results added up. `ServiceError` naming the copy
    when one failed (the others are stopped then)."""
    context = multiprocessing.get_context("spawn")
    # plain shared numbers, polled: a process that ends while it waits on a shared Event or
    # Barrier would leave the parent's `set()` or `abort()` waiting for it for ever
    control = context.Array("b", 2, lock=False)  # [stop, abort]
    ready = context.Value("i", 0)
    sent = context.Array("q", plan.copies, lock=False)
    results: Queue[tuple[int, ReplayResult | str]] = context.Queue()
    processes = [
        context.Process(
            target=_copy_main,
            args=(settings, plan, copy, control, ready, sent, results),
            name=f"statestream-replay-copy-{copy}",
        )
        for copy in range(plan.copies)
    ]
    for process in processes:
        process.start()
    outcomes: dict[int, ReplayResult | str] = {}
    try:
        while len(outcomes) < plan.copies:
            if stop.is_set():
                control[STOP] = 1
            _collect(results, outcomes, PROGRESS_EVERY_S)
            if any(isinstance(outcome, str) for outcome in outcomes.values()):
                control[STOP] = control[ABORT] = 1
            if on_progress is not None:
                on_progress(sum(sent))
            if len(outcomes) < plan.copies and not any(p.is_alive() for p in processes):
                _collect(results, outcomes, 1.0)  # a result put just before the end
                break
    finally:
        control[STOP] = 1
        for process in processes:
            process.join(60)
    return _merged(plan, outcomes)


def _collect(
    results: Queue[tuple[int, ReplayResult | str]],
    outcomes: dict[int, ReplayResult | str],
    timeout_s: float,
) -> None:
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        try:
            copy, outcome = results.get(timeout=left)
        except queue.Empty:
            return
        outcomes[copy] = outcome


def _merged(plan: ReplayPlan, outcomes: dict[int, ReplayResult | str]) -> ReplayResult:
    missing = [copy for copy in range(plan.copies) if copy not in outcomes]
    errors = {c: o for c, o in sorted(outcomes.items()) if isinstance(o, str)}
    first = next((c for c, o in errors.items() if o != NOT_STARTED), None)
    if first is not None:
        raise ServiceError(f"replay copy {first} failed: {errors[first]}")
    if missing or errors:
        copies = ", ".join(str(c) for c in sorted({*missing, *errors}))
        raise ServiceError(f"replay copies {copies} ended without a result")
    done = [outcome for outcome in outcomes.values() if isinstance(outcome, ReplayResult)]
    result = done[0]
    for other in done[1:]:
        result = result.merged(other)
    return result


def _copy_main(
    settings: Settings,
    plan: ReplayPlan,
    copy: int,
    control: SynchronizedArray[int],
    ready: Synchronized[int],
    sent: SynchronizedArray[int],
    results: Queue[tuple[int, ReplayResult | str]],
) -> None:
    """One copy's process: replay, then put its result (or its error) on `results`."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the copies
    stop = threading.Event()

    def relay_stop() -> None:
        while not control[STOP]:
            time.sleep(POLL_S)
        stop.set()

    def on_progress(count: int) -> None:
        sent[copy] = count

    def on_start() -> None:
        """Wait until every copy is ready for its first message."""
        with ready.get_lock():
            ready.value += 1
        deadline = time.monotonic() + START_TIMEOUT_S
        while ready.value < plan.copies and not control[STOP]:
            if control[ABORT] or time.monotonic() > deadline:
                raise ServiceError(NOT_STARTED)
            time.sleep(POLL_S / 10)

    threading.Thread(target=relay_stop, daemon=True).start()
    outcome: ReplayResult | str
    try:
        outcome = replay_one(
            settings, plan, copy, stop=stop, on_progress=on_progress, on_start=on_start
        )
        sent[copy] = outcome.pace.messages
    except StatestreamError as exc:
        outcome = str(exc)
    except Exception as exc:  # reported by the parent, with its kind
        outcome = f"{type(exc).__name__}: {exc}"
    results.put((copy, outcome))
