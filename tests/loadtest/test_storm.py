"""python -m loadtest storm: every client dropped at once, back with resume, against real brokers, briefly."""

import subprocess
import sys

import pytest

from loadtest import records
from checkout import ROOT
import result_lines


def storm(tmp_path, *argv):
    """The one storm record of a run of the command (as its own process), which must exit 0."""
    out = tmp_path / "storm.jsonl"
    done = subprocess.run([sys.executable, "-m", "loadtest", "storm", "--out", str(out), "--clients", "60",
                           "--procs", "2", "--rate", "20", "--before", "1", "--after", "3", "--backoff", "1",
                           *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    (summary,) = [line for line in map(records.parse, result_lines.read(str(out))) if line.TYPE == "storm"]
    return summary


def assert_every_client_complete(summary):
    """Every client back and holding every message once (an attempt that had to be made
    again on a slow machine is no failure: ``reconnect_failures`` may count it)."""
    assert (summary.connected, summary.complete, summary.published) == (60, 60, 80), summary
    assert (summary.holes, summary.duplicates, summary.gaps) == (0, 0, {})
    assert summary.not_caught_up == 0 and summary.caught_up_ms["max"] < 30000
    assert summary.end == "completed"


@pytest.mark.parametrize("transport", ["websocket", "xhr-streaming"])
def test_every_client_of_a_broker_comes_back_with_every_message_once(tmp_path, transport):
    assert_every_client_complete(storm(tmp_path, "--servers", "broker-cpython", "--transport", transport))


def test_every_client_of_a_cluster_comes_back_with_every_message_once(tmp_path, redis_installed):
    summary = storm(tmp_path, "--servers", "cluster-cpython", "--brokers", "3")
    assert summary.brokers == 3
    assert_every_client_complete(summary)


def test_the_raw_websocket_is_refused_since_it_carries_no_positions():
    done = subprocess.run([sys.executable, "-m", "loadtest", "storm", "--transport", "raw"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "carries no positions" in done.stderr, done.stderr
