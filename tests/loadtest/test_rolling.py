"""python -m loadtest rolling: a cluster's brokers restarted in turn, with a drain and without, against real
brokers and a real Redis, briefly."""

import subprocess
import sys
import time

import deployment
from loadtest import records
from checkout import ROOT
import result_lines

CLIENTS = 60
BROKERS = 3


def rolling(out, *flags):
    """``python -m loadtest rolling`` of a cluster-cpython of BROKERS brokers with ``flags``,
    writing ``out``: the finished process and the records it wrote."""
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "rolling", "--servers", "cluster-cpython", "--brokers", str(BROKERS),
         *flags, "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done, [records.parse(line) for line in result_lines.read(str(out))] if out.exists() else []


def test_with_a_drain_and_without_nothing_is_lost_and_every_second_counts_each_broker(tmp_path, redis_installed):
    out = tmp_path / "rolling.jsonl"
    began = time.monotonic()
    done, lines = rolling(
        out, "--clients", str(CLIENTS), "--drain-seconds", "1,0", "--procs", "2", "--rate", "4", "--before", "1",
        "--pause", "0", "--after", "0.5", "--backoff", "0.5", "--catch-up", "10",
        "--mix", "websocket=70,xhr-streaming=20,xhr-polling=10")
    took = time.monotonic() - began
    # The exit status is the verdict's, whose bounds a run this small may miss by chance: what
    # must hold whatever the chance is asserted below.
    assert done.returncode in (0, 1), done.stdout + done.stderr
    assert "restart p99 ms" in done.stderr and took < 60, took
    runs = [line for line in lines if line.TYPE == "rolling"]
    assert [run.drain_s for run in runs] == [1.0, 0.0], done.stderr
    for run in runs:
        assert (run.connected, run.complete, run.lost, run.duplicated, run.resent, run.gaps, run.never_back) == (
            CLIENTS, CLIENTS, 0, 0, 0, {}, 0), run
        assert run.end == "completed" and run.transport == "mix:websocket=70,xhr-streaming=20,xhr-polling=10"
        assert not [failure for failure in run.failures if "lost" in failure or "twice" in failure or "gap" in failure]
        restarts = [line for line in lines if line.TYPE == "broker_restart" and line.drain_s == run.drain_s]
        assert [r.broker for r in restarts] == [1, 2, 3]
        for restart in restarts:
            assert restart.exit_code == 0
            assert restart.sigterm_s < restart.exited_s < restart.listening_s <= restart.healthy_s
        if run.drain_s:
            assert all(restart.exited_s - restart.sigterm_s >= 0.9 for restart in restarts), restarts
        seconds = [line for line in lines if line.TYPE == "rolling_second" and line.drain_s == run.drain_s]
        assert [s.second for s in seconds] == list(range(len(seconds)))
        assert seconds[0].connections == [CLIENTS // BROKERS] * BROKERS
        assert all(len(s.connections) == len(s.new_sessions) == BROKERS for s in seconds)
        assert all(0 <= min(s.connections) and sum(s.connections) <= CLIENTS for s in seconds)
        assert sum(seconds[-1].connections) == CLIENTS
        # every connection a broker closed came back once, somewhere; every message reached every client once
        assert sum(map(sum, (s.new_sessions for s in seconds))) == sum(run.ends.values()) >= CLIENTS
        assert sum(s.delivered for s in seconds) == CLIENTS * run.published
        assert run.restart_s[0] == int(restarts[0].sigterm_s) and run.steady_p99_ms is not None
        assert run.peak_new_sessions == max(max(s.new_sessions) for s in seconds[run.restart_s[0]:run.restart_s[1] + 1])
    assert runs[0].new_sessions_bound == 1.5 * CLIENTS / BROKERS / 1.0 and runs[1].new_sessions_bound is None


def test_with_no_restart_every_connection_stays_where_it_is(tmp_path, redis_installed):
    out = tmp_path / "rolling.jsonl"
    done, lines = rolling(
        out, "--clients", str(CLIENTS // 2), "--restarts", "0", "--drain-seconds", "0", "--procs", "1", "--rate", "4",
        "--before", "1", "--after", "1", "--catch-up", "10", "--mix", "websocket=50,xhr-streaming=25,xhr-polling=25")
    (run,) = [line for line in lines if line.TYPE == "rolling"]
    assert not [line for line in lines if line.TYPE == "broker_restart"]
    assert (run.restart_s, run.ends, run.failures, run.complete) == (None, {}, [], CLIENTS // 2), run
    assert done.returncode == 0 and "no restart" in done.stderr, done.stdout + done.stderr


def test_first_connections_refused_by_an_accept_rate_are_tried_again(tmp_path, redis_installed):
    out = tmp_path / "rolling.jsonl"
    done, lines = rolling(
        out, "--clients", str(CLIENTS // 2), "--restarts", "0", "--drain-seconds", "0", "--procs", "1", "--rate", "4",
        "--before", "1", "--after", "0.5", "--catch-up", "10", "--broker-flags", "--max-accept-rate 5")
    # 10 clients at each broker at once, which takes 5 of them in its first second.
    (run,) = [line for line in lines if line.TYPE == "rolling"]
    assert (run.connected, run.complete, run.failures) == (CLIENTS // 2, CLIENTS // 2, []), run
    assert sum(run.first_connect_failures.values()) >= 1, run
    assert "first connections tried again: " in done.stderr, done.stderr
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_rolling_restart_needs_two_brokers_and_positions():
    for argv, said in ((["--brokers", "1"], "2 or more"), (["--transport", "raw"], "carries no positions")):
        done = subprocess.run([sys.executable, "-m", "loadtest", "rolling", *argv], cwd=ROOT,
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr, done.stderr


def test_through_haproxy_the_brokers_count_their_sessions(tmp_path, redis_installed):
    deployment.require_haproxy()
    out = tmp_path / "rolling.jsonl"
    done, lines = rolling(
        out, "--clients", str(CLIENTS), "--drain-seconds", "0", "--procs", "2", "--rate", "4", "--before", "2",
        "--pause", "0", "--after", "0.5", "--backoff", "0.5", "--catch-up", "10", "--haproxy", "2",
        "--source-addresses", "127.0.0.2-127.0.0.5", "--mix", "websocket=70,xhr-streaming=20,xhr-polling=10")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (run,) = [line for line in lines if line.TYPE == "rolling"]
    assert (run.connected, run.complete, run.lost, run.duplicated, run.never_back) == (CLIENTS, CLIENTS, 0, 0, 0), run
    assert run.haproxy == 2 and run.proxy_answers["101"] >= CLIENTS // 2 and run.proxy_answers["200"] >= CLIENTS // 4
    assert "through 2 haproxy" in done.stderr
    seconds = [line for line in lines if line.TYPE == "rolling_second"]
    # Counted by the brokers, not by the clients, who cannot tell where haproxy sent them:
    # every client is at some broker in the first second, a second before the first restart,
    # and at the end.
    assert sum(seconds[0].connections) == sum(seconds[-1].connections) == CLIENTS, seconds
    assert 0 < sum(map(sum, (s.new_sessions for s in seconds))) <= sum(run.ends.values())
    assert sum(s.delivered for s in seconds) == CLIENTS * run.published


def test_a_crash_each_broker_killed_in_turn_loses_nothing(tmp_path, redis_installed):
    out = tmp_path / "rolling.jsonl"
    done, lines = rolling(
        out, "--clients", str(CLIENTS), "--signal", "KILL", "--drain-seconds", "0", "--procs", "2", "--rate", "4",
        "--before", "1", "--pause", "0", "--after", "0.5", "--backoff", "0.5", "--catch-up", "10",
        "--mix", "websocket=70,xhr-streaming=20,xhr-polling=10")
    assert done.returncode in (0, 1), done.stdout + done.stderr
    (run,) = [line for line in lines if line.TYPE == "rolling"]
    assert (run.connected, run.complete, run.lost, run.duplicated, run.never_back) == (CLIENTS, CLIENTS, 0, 0, 0), run
    assert run.signal == "KILL" and "SIGKILL" in done.stderr
    restarts = [line for line in lines if line.TYPE == "broker_restart"]
    assert [r.exit_code for r in restarts] == [-9] * BROKERS
    assert not [failure for failure in run.failures if "exited" in failure], run.failures
    # Cut, not closed: the clients were told nothing.
    assert "SockJS close [3012" not in " ".join(run.ends), run.ends
    # The clients of the brokers still up, timed apart from those cut.
    assert run.uncut_p99_ms is not None and run.p99_bound_ms is not None, run
