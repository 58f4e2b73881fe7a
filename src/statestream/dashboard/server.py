"""`run_dashboard`: check the settings and the machine, then serve the app with uvicorn."""

from __future__ import annotations

import socket
from collections.abc import Callable

from statestream.config import Settings
from statestream.dashboard.app import STATIC_DIR, VENDOR_FILES, create_app
from statestream.errors import ConfigError, EnvironmentProblem


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
    """Serve the dashboard until Ctrl-C (or SIGTERM); `on_ready` gets its address first."""
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
    if on_ready is not None:
        on_ready(dashboard_url(settings))
    uvicorn.Server(config).run()
