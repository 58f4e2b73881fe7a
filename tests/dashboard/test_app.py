"""The app without Kafka: the token gate, the page's files, and how a feed batch is applied."""

from __future__ import annotations

import json

import pytest
from pydantic import SecretStr
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from statestream.config import Settings
from statestream.dashboard import ClientHub, DashboardState, WindowResult, create_app
from statestream.dashboard.auth import TOKEN_COOKIE, cookie_value
from statestream.dashboard.kafka_feed import FeedBatch

TOKEN = "s3cret-token"


def settings_with(token: str | None = None) -> Settings:
    settings = Settings()
    dashboard = settings.dashboard.model_copy(update={"token": SecretStr(token) if token else None})
    return settings.model_copy(update={"dashboard": dashboard})


@pytest.fixture
def gated() -> TestClient:
    with TestClient(create_app(settings_with(TOKEN), start_feed=False)) as client:
        yield client


def test_without_a_token_every_request_is_refused(gated: TestClient) -> None:
    for path in ("/", "/api/health", "/static/dashboard.js"):
        response = gated.get(path)
        assert response.status_code == 401, path
        assert response.headers["www-authenticate"] == "Bearer"


def test_a_wrong_token_is_refused(gated: TestClient) -> None:
    assert gated.get("/", params={"token": "wrong"}).status_code == 403
    assert gated.get("/", headers={"Authorization": "Bearer wrong"}).status_code == 403


def test_the_token_in_the_address_lets_in_and_sets_a_cookie(gated: TestClient) -> None:
    response = gated.get("/", params={"token": TOKEN})
    assert response.status_code == 200 and "statestream" in response.text
    cookie = response.headers["set-cookie"]
    assert f"{TOKEN_COOKIE}={cookie_value(TOKEN)}" in cookie and "HttpOnly" in cookie
    assert TOKEN not in cookie
    assert gated.get("/static/dashboard.js").status_code == 200  # the cookie carries it
    gated.cookies.clear()
    assert gated.get("/api/health", headers={"Authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_a_websocket_without_the_token_is_refused(gated: TestClient) -> None:
    with pytest.raises(WebSocketDisconnect) as refused, gated.websocket_connect("/ws"):
        pass
    assert refused.value.code == 1008
    with gated.websocket_connect("/ws", headers={"Authorization": f"Bearer {TOKEN}"}):
        pass


def test_a_websocket_from_another_site_is_refused() -> None:
    with TestClient(create_app(settings_with(None), start_feed=False)) as client:
        with (
            pytest.raises(WebSocketDisconnect),
            client.websocket_connect("/ws", headers={"Origin": "http://evil.example"}),
        ):
            pass
        assert client.get("/").status_code == 200  # no token set: open on localhost


def window(kind: str, start: int, **values: float) -> WindowResult:
    return WindowResult("R1", "C11", kind, start, start + 60_000, values)


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_a_batch_goes_through_the_display_policy_to_every_page() -> None:
    clock = FakeClock()
    state = DashboardState(settings_with(None), clock=clock)
    page = state.hub.connect()
    newer, older = window("levels", 60_000, **{"0-20": 5.0}), window("levels", 0, **{"0-20": 9.0})
    state.apply(FeedBatch(results=[newer]))
    state.apply(FeedBatch(results=[older], health={"topics": []}))
    first, second = (json.loads(page._messages.popleft()) for _ in range(2))
    assert [r["window_start"] for r in first["results"]] == [60_000]
    assert second["results"] == [] and second["health"]["pages"] == 1
    clock.now = 65.0  # levels: 60 s window + 5 s
    state.sweep()
    assert json.loads(page._messages.popleft()) == {"type": "update", "expired": ["R1.C11.levels"]}


def test_a_slow_page_drops_its_oldest_messages() -> None:
    hub = ClientHub(queue_size=3)
    slow = hub.connect()
    for n in range(10):
        hub.publish(str(n))
    assert list(slow._messages) == ["7", "8", "9"] and hub.dropped == 7
    hub.disconnect(slow)
    assert hub.clients == 0 and hub.dropped == 7
