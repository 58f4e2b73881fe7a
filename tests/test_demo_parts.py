"""How a demo's part stops: SIGINT, as Ctrl-C, when the demo asks and once the demo has ended."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator

from statestream.demo import LIFELINE_ENV

# a part: counts the SIGINTs it gets (KeyboardInterrupt each), ends 1 s after the first
_PART = """
import signal, sys, time
from statestream.demo import stop_when_demo_ends
stop_when_demo_ends()
interrupts, announced = 0, False
deadline = time.monotonic() + 60
while time.monotonic() < deadline:
    try:  # "waiting" inside the try: a SIGINT right after it is counted, not a crash
        if not announced:
            announced = True
            print("waiting", flush=True)
        time.sleep(0.05)
    except KeyboardInterrupt:
        interrupts += 1
        deadline = min(deadline, time.monotonic() + 1.0)
print(f"interrupts {interrupts}", flush=True)
"""


class _Demo:
    """The demo's side of a part's lifeline: the write end, which `end` closes (once)."""

    def __init__(self, write_end: int) -> None:
        self.write_end: int | None = write_end

    def end(self) -> None:
        if self.write_end is not None:
            os.close(self.write_end)
            self.write_end = None


@contextlib.contextmanager
def _part_of_a_demo_ignoring_sigint() -> Iterator[tuple[subprocess.Popen, _Demo]]:
    """A part started as `DemoPart.start` does, by a demo that ignores SIGINT (a shell does
    that to what it starts in the background, and an ignored signal stays so across exec)."""
    lifeline, write_end = os.pipe()
    demo = _Demo(write_end)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        part = subprocess.Popen(
            [sys.executable, "-c", _PART],
            env={**os.environ, LIFELINE_ENV: str(lifeline)},
            stdout=subprocess.PIPE,
            text=True,
            start_new_session=True,
            pass_fds=(lifeline,),
        )
    finally:
        signal.signal(signal.SIGINT, previous)
        os.close(lifeline)
    try:
        assert part.stdout is not None and part.stdout.readline() == "waiting\n"
        yield part, demo
    finally:
        part.kill()
        part.wait()
        demo.end()


def test_the_demo_stops_a_part_with_sigint_even_when_the_demo_ignores_it() -> None:
    with _part_of_a_demo_ignoring_sigint() as (part, _):
        part.send_signal(signal.SIGINT)
        output, _ = part.communicate(timeout=20)
    assert output == "interrupts 1\n"


def test_a_part_gets_one_sigint_once_its_demo_has_ended() -> None:
    """The demo's end closes the lifeline's write end (its process holds the only one)."""
    with _part_of_a_demo_ignoring_sigint() as (part, demo):
        assert demo.write_end is not None
        os.write(demo.write_end, b"x")  # what the pipe carries does not matter
        time.sleep(0.5)
        assert part.poll() is None  # the demo still runs
        demo.end()
        output, _ = part.communicate(timeout=20)
    assert output == "interrupts 1\n"
