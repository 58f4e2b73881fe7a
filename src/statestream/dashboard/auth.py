"""The dashboard's token gate: with a token set, every request and websocket must carry it.

The token may come as `?token=…` (the address a user opens; the answer then sets a cookie holding
a digest of it, so the page's scripts, styles and websocket are let in too), as that cookie, or as
`Authorization: Bearer …`. A request without a token is answered 401, one with a wrong token
403; a websocket handshake without the right token is refused (HTTP 403 from the server). A
websocket whose Origin is another site is refused whether a token is set or not.
"""

from __future__ import annotations

import hashlib
import secrets
from urllib.parse import urlsplit

from starlette.datastructures import MutableHeaders
from starlette.requests import HTTPConnection
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from starlette.websockets import WebSocketClose

TOKEN_COOKIE = "statestream_dashboard_token"
TOKEN_PARAM = "token"


class TokenGate:
    """ASGI middleware that lets through only requests with the right token (when one is set)."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        connection = HTTPConnection(scope)
        if scope["type"] == "websocket" and not _same_origin(connection):
            await WebSocketClose(code=1008, reason="cross-origin").__call__(scope, receive, send)
            return
        if self.token is None:
            await self.app(scope, receive, send)
            return
        presented, from_query = presented_token(connection)
        if presented is None or not _matches(presented, self.token):
            await self._refuse(scope, receive, send, missing=presented is None)
            return
        if from_query and scope["type"] == "http":
            send = _setting_cookie(send, self.token)
        await self.app(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, missing: bool) -> None:
        if scope["type"] == "websocket":
            await WebSocketClose(code=1008, reason="token required")(scope, receive, send)
            return
        if missing:
            response = PlainTextResponse(
                "401: this dashboard needs its token: open it as /?token=<token>",
                status_code=401,
                headers={"WWW-Authenticate": "Bearer"},
            )
        else:
            response = PlainTextResponse("403: wrong token", status_code=403)
        await response(scope, receive, send)


def presented_token(connection: HTTPConnection) -> tuple[str | None, bool]:
    """The token a request carries (query, bearer header or cookie) and whether it was the query."""
    if TOKEN_PARAM in connection.query_params:
        return connection.query_params[TOKEN_PARAM], True
    scheme, _, value = connection.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and value:
        return value.strip(), False
    return connection.cookies.get(TOKEN_COOKIE), False


def cookie_value(token: str) -> str:
    """What the cookie holds: a digest of the token (cookie-safe, and not the token itself)."""
    return hashlib.sha256(f"statestream-dashboard:{token}".encode()).hexdigest()


def _matches(presented: str, token: str) -> bool:
    return secrets.compare_digest(presented.encode(), token.encode()) or secrets.compare_digest(
        presented.encode(), cookie_value(token).encode()
    )


def _same_origin(connection: HTTPConnection) -> bool:
    origin = connection.headers.get("origin")
    return origin is None or urlsplit(origin).netloc == connection.headers.get("host")


def _setting_cookie(send: Send, token: str) -> Send:
    async def send_with_cookie(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = MutableHeaders(scope=message)
            cookie = f"{TOKEN_COOKIE}={cookie_value(token)}; Path=/; HttpOnly; SameSite=Strict"
            headers.append("set-cookie", cookie)
        await send(message)

    return send_with_cookie
