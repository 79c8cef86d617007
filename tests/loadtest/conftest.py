import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.fixture
def broker_server(start_broker):
    return start_broker().server


@pytest.fixture
def slow_server(start_server):
    """A sockjs-tornado broadcast server that blocks ``delay`` seconds per message."""

    def start(delay):
        return start_server(sys.executable, os.path.join(HERE, "slow_server.py"),
                            "--host", "127.0.0.1", "--port", "0", "--delay", str(delay))

    return start
