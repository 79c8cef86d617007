import os
import sys

import pytest

from loadtest.servers import launch

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def start_server():
    """Start servers by argv; each is stopped after the test."""
    started = []

    def start(*argv):
        server = launch(list(argv))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def broker_server(start_server):
    return start_server(sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port", "0",
                        "--log-level", "warning")


@pytest.fixture
def slow_server(start_server):
    """A sockjs-tornado broadcast server that blocks ``delay`` seconds per message."""

    def start(delay):
        return start_server(sys.executable, os.path.join(HERE, "slow_server.py"),
                            "--host", "127.0.0.1", "--port", "0", "--delay", str(delay))

    return start
