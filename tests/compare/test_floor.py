import json
import resource
import socket
import subprocess
import sys
import threading

from loadtest.scenarios import floor


def test_floor_sends_every_round_and_reports_cpu_per_send():
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "floor", "--connections", "20", "--rate", "2000", "--seconds", "0.5"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["type"] == "floor" and record["drain_ok"]
    assert record["sends"] % 20 == 0 and record["sends"] >= 20 * 40
    assert record["blocked"] == 0
    assert record["cpu_us_per_send"] >= 0


def test_a_drain_that_cannot_connect_ends_the_floor_at_once():
    few_files = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # noqa: E731
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "floor", "--connections", "200", "--seconds", "0.5"],
        capture_output=True, text=True, timeout=10, preexec_fn=few_files,
    )
    assert done.returncode == 1
    assert "floor drain: [Errno 24] Too many open files" in done.stderr
    assert "floor: the drain exited after" in done.stderr


def test_the_drain_spreads_its_connections_over_the_source_addresses():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)
        results = []
        drain = threading.Thread(target=lambda: results.append(
            floor._drain(listener.getsockname(), 4, None, ["127.0.0.2", "127.0.0.3"])))
        drain.start()
        peers = [listener.accept()[0] for _ in range(4)]
        sources = sorted(peer.getpeername()[0] for peer in peers)
        for peer in peers:
            peer.sendall(b"frame")
            peer.close()
        drain.join(10)
    assert sources == ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"]
    assert results == [0]
