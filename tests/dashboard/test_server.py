"""What `statestream dashboard` refuses before it starts serving, and how signals stop it."""

from __future__ import annotations

import os
import signal
import socket

import pytest
import uvicorn
from pydantic import SecretStr

from statestream.config import Settings
from statestream.dashboard import check_can_serve, dashboard_url
from statestream.dashboard.server import _server, _stopped_by_signals
from statestream.errors import ConfigError, EnvironmentProblem
from tests.support import run_cli


def with_dashboard(**changes) -> Settings:
    settings = Settings()
    return settings.model_copy(update={"dashboard": settings.dashboard.model_copy(update=changes)})


def test_beyond_localhost_a_token_is_required() -> None:
    with pytest.raises(ConfigError, match="without a token"):
        check_can_serve(with_dashboard(host="0.0.0.0"))


def test_a_taken_port_is_refused() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(EnvironmentProblem, match=f"127.0.0.1:{port}"):
            check_can_serve(with_dashboard(host="127.0.0.1", port=port, token=SecretStr("t")))


def test_the_address_printed() -> None:
    assert dashboard_url(with_dashboard()) == "http://localhost:8050/"
    assert dashboard_url(with_dashboard(host="::1", port=9000)) == "http://[::1]:9000/"


def test_the_command_refuses_a_public_host_without_a_token() -> None:
    result = run_cli("dashboard", "--host", "0.0.0.0", "--port", "8099", inherit_settings=False)
    assert result.exit_code == 2
    assert "STATESTREAM_DASHBOARD__TOKEN" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["INT", "TERM"])
def test_a_signal_asks_the_server_to_stop_and_a_second_one_at_once(signum: int) -> None:
    server = _server(uvicorn.Config(app=None))
    before = signal.getsignal(signum)
    with _stopped_by_signals(server):
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0.2)  # the handler runs at the latest during this wait
        assert (server.should_exit, server.force_exit) == (True, False)
        os.kill(os.getpid(), signum)
        signal.sigtimedwait([], 0.2)
        assert server.force_exit
    assert signal.getsignal(signum) is before


def test_the_server_leaves_the_signals_to_us() -> None:
    """uvicorn's own handlers would raise the signal again inside the event loop once served."""
    server = _server(uvicorn.Config(app=None))
    before = signal.getsignal(signal.SIGINT)
    with server.capture_signals():
        assert signal.getsignal(signal.SIGINT) is before
