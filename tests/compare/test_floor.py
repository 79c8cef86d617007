import json
import resource
import subprocess
import sys


def test_floor_sends_every_round_and_reports_cpu_per_send():
    done = subprocess.run(
        [sys.executable, "-m", "loadtest.floor", "--connections", "20", "--rate", "2000", "--seconds", "0.5"],
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
        [sys.executable, "-m", "loadtest.floor", "--connections", "200", "--seconds", "0.5"],
        capture_output=True, text=True, timeout=10, preexec_fn=few_files,
    )
    assert done.returncode == 1
    assert "floor drain: [Errno 24] Too many open files" in done.stderr
    assert "floor: the drain exited after" in done.stderr
