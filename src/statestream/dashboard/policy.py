"""The display policy of window results (the thesis' visualization rules), pure and clock-free.

- A result replaces the one shown for the same thing, component and kind only if it is for the
  same or a newer event time (its window): a late or replayed result for an older window never
  pushes a newer one off the screen, and a refined result for the same window does replace it.
- A shown result expires once its window length plus a grace of 5 s has passed since it was
  shown without a newer one arriving: a stopped pipeline leaves no stale figures on screen.

Times passed in are seconds of a monotonic clock (the caller's), so the rules are easy to test.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

EXPIRY_GRACE_S = 5.0


class Displayed(Protocol):
    """What the board shows: a machine's `WindowResult`, a vehicle cell, a bunching alert."""

    @property
    def key(self) -> str: ...  # what a newer result replaces

    @property
    def kind(self) -> str: ...  # picks the lifetime

    @property
    def event_time(self) -> tuple[int, int]: ...  # compared: same or newer replaces

    def as_message(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class _Shown:
    result: Displayed
    expires_at: float


class ResultBoard:
    """The window results on display, one per key (thing, component, kind; or vehicle cell).

    >>> from statestream.dashboard.messages import WindowResult
    >>> board = ResultBoard({"duty_cycle": 600.0})
    >>> newer = WindowResult("R1", "C11", "duty_cycle", 60_000, 660_000, {"duty_cycle": 0.5})
    >>> older = WindowResult("R1", "C11", "duty_cycle", 0, 600_000, {"duty_cycle": 0.1})
    >>> board.offer(newer, now=0.0), board.offer(older, now=1.0)
    (True, False)
    >>> board.expire(now=605.0)
    ['R1.C11.duty_cycle']
    """

    def __init__(self, window_lengths_s: Mapping[str, float]) -> None:
        self._lifetimes = {kind: s + EXPIRY_GRACE_S for kind, s in window_lengths_s.items()}
        self._shown: dict[str, _Shown] = {}

    def lifetime_s(self, kind: str) -> float:
        """How long a result of `kind` stays on display without a newer one."""
        return self._lifetimes.get(kind, max(self._lifetimes.values(), default=0.0))

    def offer(self, result: Displayed, now: float) -> bool:
        """Show `result` if it is for the same or a newer window than the one shown; True if so."""
        shown = self._shown.get(result.key)
        if shown is not None and result.event_time < shown.result.event_time:
            return False
        self._shown[result.key] = _Shown(result, now + self.lifetime_s(result.kind))
        return True

    def offer_history(self, result: Displayed, now: float) -> bool:
        """Show a result loaded from history only if nothing is shown for its key or it is for a
        strictly newer window: reloading the same window must not extend its time on screen."""
        shown = self._shown.get(result.key)
        if shown is not None and result.event_time <= shown.result.event_time:
            return False
        return self.offer(result, now)

    def expire(self, now: float) -> list[str]:
        """Take off the results whose time is up; their keys, so that the screens drop them."""
        gone = [key for key, shown in self._shown.items() if shown.expires_at <= now]
        for key in gone:
            del self._shown[key]
        return gone

    def shown(self) -> list[Displayed]:
        """The results on display, in key order."""
        return [self._shown[key].result for key in sorted(self._shown)]

    def messages(self, now: float) -> list[dict[str, Any]]:
        """The results on display as messages, each with the seconds it has left."""
        return [
            {**shown.result.as_message(), "expires_in_s": round(shown.expires_at - now, 1)}
            for _, shown in sorted(self._shown.items())
        ]

    def message_of(self, result: Displayed, now: float) -> dict[str, Any]:
        """The message of a result just shown."""
        shown = self._shown[result.key]
        return {**result.as_message(), "expires_in_s": round(shown.expires_at - now, 1)}
