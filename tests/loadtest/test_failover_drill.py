"""python -m loadtest rolling --fail redis-primary: the Redis primary of a cluster on Sentinels
killed under resuming clients, briefly; the drill's verdict must pass."""

import os
import subprocess
import sys

import pytest

from checkout import ROOT
from loadtest import records
from loadtest.contenders import redis_sentinel
import result_lines


def test_a_primary_killed_under_thirty_clients_loses_nothing_acknowledged_and_leaves_no_gap_untold(
        tmp_path, redis_installed):
    if redis_sentinel.REDIS_SENTINEL is None:
        if os.environ.get("CI"):
            pytest.fail(redis_sentinel.HOWTO, pytrace=False)
        pytest.skip(redis_sentinel.HOWTO)
    out = tmp_path / "failover.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "rolling", "--servers", "cluster-cpython", "--brokers", "3",
         "--redis", "sentinels", "--fail", "redis-primary", "--clients", "30", "--procs", "1", "--rate", "5",
         "--before", "2", "--after", "2", "--drain-seconds", "0", "--catch-up", "10", "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=90)
    assert done.returncode == 0, done.stdout + done.stderr
    (run,) = [line for line in map(records.parse, result_lines.read(str(out))) if line.TYPE == "rolling"]
    assert (run.fail, run.redis, run.failures, run.lost, run.silent) == ("redis-primary", "sentinels", [], 0, 0)
    assert run.unavailable_s > 0 and run.catch_up_ms["p99"] >= run.catch_up_ms["p50"] > 0
    # Every message of the 2 s before the failure; after it, each publish waits out the failover
    # (19 of 20 in all once, on a loaded machine): what counts is that none was lost.
    assert run.published >= 5 * 2 and run.connected == 30
