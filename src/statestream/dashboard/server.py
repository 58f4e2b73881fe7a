"""`run_dashboard`: check the settings and the machine, then serve the app with uvicorn."""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from statestream.config import Settings
from statestream.dashboard.app import STATIC_DIR, VENDOR_FILES, create_app
from statestream.errors import ConfigError, EnvironmentProblem

if TYPE_CHECKING:
    import uvicorn


def check_can_serve(settings: Settings) -> None:
    """Refuse, with one line saying what to do, to serve without a token beyond this machine,
    without the vendored charting library, or on a port that is taken."""
    dashboard = settings.dashboard
    if not dashboard.is_local and dashboard.token is None:
        raise ConfigError(
            f"the dashboard would listen on {dashboard.host}, beyond this machine, without a "
            "token: set one (STATESTREAM_DASHBOARD__TOKEN or [dashboard] token) or use "
            "--host localhost"
        )
    missing = [name for name in VENDOR_FILES if not (STATIC_DIR / "vendor" / name).is_file()]
    if missing:
        raise EnvironmentProblem(
            f"the dashboard's charting library is missing ({', '.join(missing)} in "
            f"{STATIC_DIR / 'vendor'}): run make setup (it installs it with npm)"
        )
    _check_port_free(dashboard.host, dashboard.port)


def _check_port_free(host: str, port: int) -> None:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise ConfigError(f"dashboard host {host!r} cannot be resolved ({exc.strerror})") from None
    family, _, _, _, address = infos[0]
    with socket.socket(family, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise EnvironmentProblem(
                f"cannot listen on {host}:{port} ({exc.strerror}): another program uses it; "
                "choose another with --port"
            ) from None


def dashboard_url(settings: Settings) -> str:
    host = settings.dashboard.host
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{settings.dashboard.port}/"


def run_dashboard(settings: Settings, on_ready: Callable[[str], None] | None = None) -> None:
    """Serve the dashboard until Ctrl-C or SIGTERM (a second one: at once); `on_ready` gets its
    address first. Returns once the server and its Kafka feed have stopped."""
    import uvicorn

    check_can_serve(settings)
    config = uvicorn.Config(
        create_app(settings),
        host=settings.dashboard.host,
        port=settings.dashboard.port,
        log_level="warning",
        access_log=False,
        ws_ping_interval=20,
    )
    server = _server(config)
    if on_ready is not None:
        on_ready(dashboard_url(settings))
    with _stopped_by_signals(server):
        server.run()


def _server(config: uvicorn.Config) -> uvicorn.Server:
    """uvicorn's server without its own signal handling (`_stopped_by_signals` does it).

    Once served, uvicorn raises the signal it caught again, inside the event loop, where
    asyncio's runner takes it for a second Ctrl-C: it cancels the app's shutdown halfway (the
    Kafka feed is not stopped) and can leave a worker thread waiting, so that the process never
    ends. Stopped by a flag instead, the server shuts down in order and simply returns.
    """
    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)


@contextlib.contextmanager
def _stopped_by_signals(server: uvicorn.Server) -> Iterator[None]:
    """SIGINT or SIGTERM asks `server` to shut down cleanly; a second one, at once."""

    def stop(signum: int, frame: object) -> None:
        if server.should_exit:
            server.force_exit = True
        server.should_exit = True

    previous = {signum: signal.signal(signum, stop) for signum in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
