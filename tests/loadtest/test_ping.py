import socket
import subprocess
import sys

import pytest

from loadtest.scenarios import ping
from checkout import ROOT



@pytest.mark.parametrize("transport", ["sockjs", "raw"])
def test_ping_measures_one_round_trip(broker_server, transport):
    rtt = ping.ping(broker_server.url, transport)
    assert 0 < rtt < 5


def test_ping_of_a_closed_port_says_refused():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    result = subprocess.run(
        [sys.executable, "-m", "loadtest", "ping", "--url", "http://127.0.0.1:%d/broadcast" % port],
        cwd=ROOT, capture_output=True, text=True, timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.strip().endswith("failed: refused")
    assert "Traceback" not in result.stderr
