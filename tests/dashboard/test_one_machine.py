"""The page of one machine (the fleet's click through): only that machine's history and live
messages are sent to it."""

from __future__ import annotations

import asyncio
import json

from statestream.config import Settings
from statestream.dashboard import DashboardState, RecordShaper
from statestream.dashboard.history import history_queries
from statestream.dashboard.kafka_feed import FeedBatch
from statestream.dashboard.messages import message_for_thing
from tests.dashboard.test_fleet import duty, power

T0 = 1_795_000_000_000


def test_an_update_is_cut_down_to_one_thing() -> None:
    message = {
        "type": "update",
        "series": [power("R1", "C11", [T0], [1.0]), power("R1.5", "C11", [T0], [2.0])],
        "results": [duty("R1", "C11", 0.3).as_message(), duty("R1.5", "C11", 0.3).as_message()],
        "expired": ["R1.C12.levels", "R1.5.C11.levels"],
        "alerts": [],
        "health": None,
    }
    mine = message_for_thing(message, "R1")
    assert mine is not None
    assert [s["thing"] for s in mine["series"]] == ["R1"]
    assert [r["thing"] for r in mine["results"]] == ["R1"]
    assert mine["expired"] == ["R1.C12.levels"]  # not R1.5's, whose name starts the same
    assert message_for_thing(message, "R2") is None


def test_a_page_of_one_machine_gets_that_machines_messages_only() -> None:
    state = DashboardState(Settings())
    hub = state.hub_of("machines", "R2")
    assert hub is state.hub_of(None, "R2") and hub is not state.hub
    page = hub.connect()
    state.apply(FeedBatch(series=[power("R1", "C11", [T0], [1.0])]))
    assert len(page) == 0
    state.apply(
        FeedBatch(series=[power("R2", "C11", [T0], [1.0])], results=[duty("R1", "C1", 0.2)])
    )
    message = json.loads(asyncio.run(page.get()))
    assert [s["thing"] for s in message["series"]] == ["R2"] and message["results"] == []
    state.leave(hub, page)
    assert state.thing_hubs == {}


def test_the_history_of_one_machine_asks_for_that_machine_only() -> None:
    statements = history_queries(RecordShaper(Settings().join.specs), 10, thing="R'1")
    assert all("\"thing\" = 'R\\'1'" in statement for statement in statements)
    assert not any('thing" =' in s for s in history_queries(RecordShaper([]), 10))
