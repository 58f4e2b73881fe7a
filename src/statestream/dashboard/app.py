"""The dashboard's ASGI app (Starlette): the page, its history, its live websocket.

    GET /              the machines page (static/index.html; ?thing=NAME shows one machine)
    GET /fleet         the fleet overview: every machine's power, duty cycle, alert state
    GET /vehicles      the map: vehicle cells as hexagons, bunching alerts
    GET /api/history   layout, recent history from InfluxDB, the results on display, the health
    GET /api/fleet     every machine's row of the fleet overview
    GET /api/vehicles  the map's layout, the cells and alerts on display
    GET /api/vehicles/base
                       the map's base layer: the simulator's routes, stops, places (GeoJSON)
    GET /api/health    the latest pipeline health
    WS  /ws            live updates: chart points, window results, expiries, alerts, health
                       (/ws?thing=NAME: of one machine only);
                       /ws?view=fleet the fleet's changed rows (once a second), /ws?view=vehicles
                       the map's cells, alerts and expiries

The Kafka feed runs on a thread from the app's start to its end; its batches are applied on the
event loop (display policy, fan-out), where everything else of the app runs too.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route, WebSocketRoute
from starlette.staticfiles import StaticFiles
from starlette.websockets import WebSocket, WebSocketDisconnect

from statestream.config import Settings
from statestream.dashboard.auth import TokenGate
from statestream.dashboard.base_layer import network_layer_json
from statestream.dashboard.fleet import FleetBoard
from statestream.dashboard.history import day_start_ms, load_history
from statestream.dashboard.hub import ClientHub
from statestream.dashboard.kafka_feed import FeedBatch, KafkaFeed
from statestream.dashboard.messages import (
    ALERT_KIND,
    DUTY_CYCLE_KIND,
    LEVELS,
    LEVELS_KIND,
    RecordShaper,
    WindowResult,
    message_for_thing,
)
from statestream.dashboard.policy import ResultBoard
from statestream.dashboard.vehicle_map import VehicleMap

STATIC_DIR = Path(__file__).parent / "static"
VENDOR_FILES = ("chart.umd.min.js", "chartjs-plugin-annotation.min.js")
SWEEP_INTERVAL_S = 1.0
MAX_PENDING_BATCHES = 8


def window_lengths_s(settings: Settings) -> dict[str, float]:
    """Window length per kind of result: those of the statistics job (settings section stats)."""
    stats = settings.stats
    return {
        LEVELS_KIND: stats.window_s,
        DUTY_CYCLE_KIND: stats.duty_window_s,
        ALERT_KIND: stats.duty_window_s,
    }


class DashboardState:
    """What the app keeps between requests: the results on display, the pages, the health.

    Lives on the event loop; the feed thread hands batches over with `deliver_threadsafe`.
    """

    def __init__(self, settings: Settings, clock: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.clock = clock
        self.shaper = RecordShaper(settings.join.specs)
        self.board = ResultBoard(window_lengths_s(settings))
        self.hub = ClientHub()
        self.thing_hubs: dict[str, ClientHub] = {}  # pages of one machine, by its name
        self.fleet = FleetBoard(settings.stats.power_quantity)
        self.fleet_hub = ClientHub()
        self.vehicles = VehicleMap(settings)
        self.vehicle_hub = ClientHub()
        self.health: dict[str, Any] = {}
        self.dropped_batches = 0
        self._submitted = 0  # written by the feed thread only
        self._applied = 0  # written by the event loop only
        self._loop: asyncio.AbstractEventLoop | None = None

    def layout(self) -> dict[str, Any]:
        """What the page needs to build its charts."""
        return {
            "charts": [{"id": c.chart_id, "title": c.title} for c in self.shaper.charts],
            "levels": list(LEVELS),
            "duty_cycle_limit": self.settings.stats.duty_limit,
            "chart_points": self.settings.dashboard.chart_points,
            "window_lengths_s": window_lengths_s(self.settings),
        }

    def bind(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop

    def deliver_threadsafe(self, batch: FeedBatch) -> None:
        """Called on the feed thread: apply `batch` on the loop; when the loop falls behind,
        the points of further batches are dropped (results, alerts and health are kept)."""
        if self._loop is None:
            return
        if self._submitted - self._applied >= MAX_PENDING_BATCHES:
            self.dropped_batches += 1
            batch.series = []
        self._submitted += 1
        self._loop.call_soon_threadsafe(self._apply_submitted, batch)

    def _apply_submitted(self, batch: FeedBatch) -> None:
        self._applied += 1
        self.apply(batch)

    def apply(self, batch: FeedBatch) -> None:
        """Put a feed batch through the display policy and send it to every page."""
        now = self.clock()
        shown = [r for r in [*batch.results, *batch.alerts] if self.board.offer(r, now)]
        expired = self.board.expire(now)
        if batch.health is not None:
            self.health = batch.health
        message = {
            "type": "update",
            "series": batch.series,
            "results": [self.board.message_of(r, now) for r in shown],
            "expired": expired,
            "alerts": [a.as_message() for a in batch.alerts],
            "health": self.health_message() if batch.health is not None else None,
        }
        self._publish_machines(message)
        self.fleet.take_series(batch.series)
        self.fleet.take_results(shown)
        self.fleet.take_expired(expired)
        if batch.cells or batch.bunching:
            self._publish_vehicles(self.vehicles.apply(batch.cells, batch.bunching))

    def sweep(self) -> None:
        """Take off expired results and tell the pages; send the fleet's changed rows."""
        expired = self.board.expire(self.clock())
        if expired:
            self._publish_machines({"type": "update", "expired": expired})
            self.fleet.take_expired(expired)
        self._publish_vehicles(self.vehicles.expire())
        changed = self.fleet.take_changes()
        if changed:
            self.fleet_hub.publish(json.dumps({"type": "fleet", "rows": changed}))

    def fleet_snapshot(self) -> dict[str, Any]:
        """Every machine's row, for a fleet page that opens (later changes come over /ws)."""
        stats = self.settings.stats
        layout = {"duty_cycle_limit": stats.duty_limit, "rated_power_kw": stats.rated_power_kw}
        return {"layout": layout, "rows": self.fleet.rows()}

    def hub_of(self, view: str | None, thing: str | None = None) -> ClientHub | None:
        """The hub of a page: machines (default; of one `thing` if given), fleet or vehicles;
        None for another view."""
        if thing and view in (None, "machines"):
            return self.thing_hubs.setdefault(thing, ClientHub())
        hubs = {"machines": self.hub, "fleet": self.fleet_hub, "vehicles": self.vehicle_hub}
        return hubs.get(view or "machines")

    def leave(self, hub: ClientHub, client: Any) -> None:
        """A page has gone: take it off its hub (and a machine's hub once no page is left)."""
        hub.disconnect(client)
        for thing, thing_hub in list(self.thing_hubs.items()):
            if thing_hub is hub and hub.clients == 0:
                del self.thing_hubs[thing]

    def _publish_machines(self, message: dict[str, Any]) -> None:
        """To every machines page, and its part of it to each page of one machine."""
        self.hub.publish(json.dumps(message))
        for thing, hub in self.thing_hubs.items():
            mine = message_for_thing(message, thing)
            if mine is not None:
                hub.publish(json.dumps(mine))

    def _publish_vehicles(self, message: dict[str, Any] | None) -> None:
        if message is not None:
            self.vehicle_hub.publish(json.dumps(message))

    def health_message(self) -> dict[str, Any]:
        hubs = [self.hub, self.fleet_hub, self.vehicle_hub, *self.thing_hubs.values()]
        return {
            **self.health,
            "pages": sum(hub.clients for hub in hubs),
            "dropped_messages": sum(hub.dropped for hub in hubs),
            "dropped_batches": self.dropped_batches,
        }

    def offer_history(self, results: list[WindowResult]) -> None:
        """Show the window results a page loaded from InfluxDB, unless newer ones are shown."""
        now = self.clock()
        for result in results:
            self.board.offer_history(result, now)


def _static_page(name: str) -> Callable[[Request], Any]:
    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / name, headers={"Cache-Control": "no-store"})

    return page


page = _static_page("index.html")


async def history(request: Request) -> Response:
    state: DashboardState = request.app.state.dashboard
    settings = state.settings
    thing = request.query_params.get("thing") or None
    points = settings.dashboard.history_points
    since = day_start_ms(time.time_ns() // 1_000_000) if thing is not None else None
    loaded = await run_in_threadpool(
        load_history, settings.influx, state.shaper, points, thing=thing, since_ms=since
    )
    state.sweep()
    state.offer_history(loaded.results)
    shown = state.board.messages(state.clock())
    return JSONResponse(
        {
            "layout": state.layout(),
            "series": loaded.series,
            "results": [r for r in shown if thing is None or r["thing"] == thing],
            "alerts": [a.as_message() for a in loaded.alerts],
            "health": state.health_message(),
            "error": loaded.error,
        }
    )


async def health(request: Request) -> Response:
    return JSONResponse(request.app.state.dashboard.health_message())


async def fleet(request: Request) -> Response:
    return JSONResponse(request.app.state.dashboard.fleet_snapshot())


async def vehicles(request: Request) -> Response:
    return JSONResponse(request.app.state.dashboard.vehicles.snapshot())


async def vehicles_base(request: Request) -> Response:
    return Response(network_layer_json(), media_type="application/geo+json")


async def live(websocket: WebSocket) -> None:
    """Send the page every live message until it goes away."""
    state: DashboardState = websocket.app.state.dashboard
    hub = state.hub_of(websocket.query_params.get("view"), websocket.query_params.get("thing"))
    if hub is None:
        await websocket.close(code=1008, reason="view is machines, fleet or vehicles")
        return
    client = hub.connect()  # before the handshake ends: the page misses nothing after it
    try:
        await websocket.accept()
    except Exception:
        state.leave(hub, client)
        raise

    async def send_all() -> None:
        while True:
            await websocket.send_text(await client.get())

    sender = asyncio.create_task(send_all())
    try:
        while True:
            await websocket.receive_text()  # the page sends nothing; this notices it leaving
    except WebSocketDisconnect:
        pass
    finally:
        state.leave(hub, client)
        sender.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await sender


def create_app(settings: Settings, *, start_feed: bool = True) -> Starlette:
    """The dashboard app for `settings`; `start_feed=False` leaves Kafka alone (unit tests)."""
    state = DashboardState(settings)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        state.bind(asyncio.get_running_loop())
        feed = KafkaFeed(settings, state.deliver_threadsafe) if start_feed else None
        if feed is not None:
            feed.start()
        sweeper = asyncio.create_task(_sweep_forever(state))
        try:
            yield
        finally:
            sweeper.cancel()
            if feed is not None:
                await run_in_threadpool(feed.stop)

    token = settings.dashboard.token
    app = Starlette(
        routes=[
            Route("/", page),
            Route("/fleet", _static_page("fleet.html")),
            Route("/vehicles", _static_page("vehicles.html")),
            Route("/api/history", history),
            Route("/api/fleet", fleet),
            Route("/api/vehicles", vehicles),
            Route("/api/vehicles/base", vehicles_base),
            Route("/api/health", health),
            WebSocketRoute("/ws", live),
            Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
        ],
        middleware=[Middleware(TokenGate, token=token.get_secret_value() if token else None)],
        lifespan=lifespan,
    )
    app.state.dashboard = state
    return app


async def _sweep_forever(state: DashboardState) -> None:
    while True:
        await asyncio.sleep(SWEEP_INTERVAL_S)
        state.sweep()
