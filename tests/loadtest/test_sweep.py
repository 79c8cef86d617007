"""Sweeps against real servers over loopback: the broker, a slow server, a crashing server."""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request

import pytest

from loadtest.client import sweep
from loadtest.client.sweep import Options
from loadtest.errors import ServerGone
from loadtest.method import rules
from checkout import ROOT
import result_lines



def stats(server):
    with urllib.request.urlopen(server.url.rsplit("/", 1)[0] + "/stats", timeout=5) as response:
        return json.loads(response.read())


@pytest.mark.parametrize("transport", ["sockjs", "raw"])
def test_small_sweep_against_the_broker_counts_every_delivery(broker_server, transport):
    steps, levels = [], []
    before = stats(broker_server)["messages_out"]
    returned = sweep.run_sweep(
        Options([broker_server.url], levels=[10, 20], rates=[20, 50], duration=1.0, pause=0.1, transport=transport,
                server="broker", server_pids=[broker_server.pid]),
        on_step=steps.append, on_level=levels.append,
    )
    assert returned == steps
    assert [(s.level, s.rate) for s in steps] == [(10, 20), (10, 50), (20, 20), (20, 50)]
    for step in steps:
        assert step.sent == step.rate * 1
        assert step.received == step.sent * step.level
        assert step.lost == step.dropped == 0
        rtt = step.rtt_ms
        assert 0 < rtt["p50"] <= rtt["p95"] <= rtt["p99"] <= rtt["max"]
        assert rtt["mean"] > 0
        assert step.server_msgs_per_s == pytest.approx(step.received / step.duration_s, rel=0.01)
        assert step.server_rss_kb > 0 and step.server_cpu is not None
        assert not step.overloaded
    assert [lv.end for lv in levels] == ["sweep done", "sweep done"]
    delivered = stats(broker_server)["messages_out"] - before
    assert delivered == sum(step.received for step in steps)


def test_the_sweep_goes_past_the_old_800_msgs_until_a_step_breaks(start_broker, monkeypatch):
    """Small buffers make the broker cut a client as soon as it falls behind, so
    the level ends below the cap however fast the machine (the broker's
    batches grow with the rate: at 100 clients they carry millions of
    deliveries a second, so only a buffer smaller than a few batches breaks).
    The cap is raised tenfold: here the break comes between 58,000 msgs/s
    and the default cap's 100,000, at the cap itself in one run of four."""
    monkeypatch.setattr(rules, "MAX_RATE", 10 * rules.MAX_RATE)
    monkeypatch.setattr(rules, "MAX_DELIVERIES_PER_S", 10 * rules.MAX_DELIVERIES_PER_S)
    broker = start_broker("--client-rate", "0", "--send-buffer", "4096", "--max-buffer", "2048").server
    steps, levels = [], []
    started = time.monotonic()
    sweep.run_sweep(Options([broker.url], levels=[100], duration=0.25, pause=0, server="broker",
                            server_pids=[broker.pid]), on_step=steps.append, on_level=levels.append)
    took = time.monotonic() - started
    rates = [step.rate for step in steps]
    assert rates == rules.rate_schedule(100)[:len(steps)] and rates[0] == 10
    assert 800 < rates[-1] < rules.rate_cap(100)
    assert [rules.ends_sweep(steps[:n]) for n in range(1, len(steps) + 1)] == [False] * (len(steps) - 1) + [True]
    assert rules.End.of(levels[0].end) in (rules.End.OVERLOADED, rules.End.CLIENT_BOUND)
    assert levels[0].end == rules.level_end(steps[-1])
    assert took < 60, "%d steps in %.0f s" % (len(steps), took)


def test_a_sweep_that_reaches_the_cap_says_so(broker_server, monkeypatch):
    monkeypatch.setattr(rules, "MAX_RATE", 20)
    levels = []
    steps = sweep.run_sweep(Options([broker_server.url], levels=[2], duration=0.2, pause=0), on_level=levels.append)
    assert [(step.rate, step.overloaded) for step in steps] == [(20, False)]
    assert levels[0].end == "the sweep's cap reached: 20 msgs/s x 2 clients = 40 deliveries/s"


def test_clients_spread_over_worker_processes_merge_their_figures(broker_server):
    steps = sweep.run_sweep(Options([broker_server.url], levels=[9], rates=[30], duration=1.0, pause=0.1, procs=2))
    step = steps[0]
    assert step.sent == 30
    assert step.received == 30 * 9
    assert step.lost == step.dropped == 0
    assert 0 < step.rtt_ms["p50"] <= step.rtt_ms["p99"] <= step.rtt_ms["max"]


def test_more_worker_processes_than_clients_leaves_none_idle(broker_server):
    levels = []
    steps = sweep.run_sweep(Options([broker_server.url], levels=[2], rates=[10], duration=0.5, pause=0.1, procs=3),
                            on_level=levels.append)
    assert levels[0].end == "sweep done"
    assert steps[0].received == steps[0].sent * 2 > 0


def test_a_slow_server_overloads_and_ends_the_level(slow_server):
    server = slow_server(0.2)
    steps, levels = [], []
    sweep.run_sweep(Options([server.url], levels=[3], rates=[2, 20, 40], duration=1.0, pause=0.1),
                    on_step=steps.append, on_level=levels.append)
    assert [s.rate for s in steps] == [2, 20]
    assert not steps[0].overloaded
    assert steps[1].overloaded
    assert "mean round trip" in steps[1].overload_reason
    assert steps[1].rtt_ms["mean"] > rules.MAX_MEAN_RTT_MS
    assert levels[0].end.startswith("overloaded: mean round trip")


def test_a_held_load_goes_on_past_an_overloaded_step(slow_server):
    server = slow_server(0.2)
    steps, levels = [], []
    sweep.run_sweep(Options([server.url], levels=[3], rates=[20, 2], duration=1.0, pause=0, stop_at_overload=False),
                    on_step=steps.append, on_level=levels.append)
    assert [(s.rate, s.overloaded) for s in steps] == [(20, True), (2, False)]
    assert steps[1].received == steps[1].sent * 3
    assert levels[0].end == "sweep done"


def run_cli(url, out, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "loadtest", "--url", url, "--clients", "5", "--step-seconds", "0.5",
         "--pause", "0.1", "--out", str(out), *extra],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def wait_for_steps(out, count, process, timeout=20):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(out) and sum(r["type"] == "step" for r in result_lines.read(out)) >= count:
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.05)
    raise AssertionError("no %d steps within %s s" % (count, timeout))


@pytest.mark.parametrize("pid_known", [True, False])
def test_a_crashed_server_ends_the_run_with_a_message_and_partial_results(slow_server, tmp_path,
                                                                         pid_known):
    server = slow_server(0)
    out = tmp_path / "run.jsonl"
    extra = ["--server-pid", str(server.pid)] if pid_known else []
    process = run_cli(server.url, out, "--label", "doomed", *extra)
    try:
        wait_for_steps(out, 2, process)
        server.process.kill()
        stdout, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 1
    assert "Traceback" not in stderr
    assert "run ended:" in stderr
    records = result_lines.read(out)
    assert [r["type"] for r in records[:2]] == ["run", "server"]
    assert records[1]["server"] == "doomed"
    assert records[1]["pid"] == server.pid, "given, or found listening on its port"
    assert sum(r["type"] == "step" for r in records) >= 2
    assert "clients" in stdout


def test_ctrl_c_stops_cleanly_and_keeps_the_results(slow_server, tmp_path):
    server = slow_server(0)
    out = tmp_path / "run.jsonl"
    process = run_cli(server.url, out)
    try:
        wait_for_steps(out, 1, process)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=20)
    finally:
        process.kill()
    assert process.returncode == 130
    assert "Traceback" not in stderr and "interrupted" in stderr
    records = result_lines.read(out)
    assert records[0]["type"] == "run" and records[0]["transport"] == "websocket"
    assert records[0]["client"]["interpreter"] and records[0]["machine"]["cores"]
    steps = [r for r in records if r["type"] == "step"]
    assert steps and records[-1] == {"type": "level", "server": server.url.split("/")[2], "transport": "websocket",
                                     "level": 5, "end": "interrupted"}, records[-2:]
    summary = stdout.splitlines()
    assert summary[0] == "5 clients, %d steps:" % len(steps)
    assert summary[-2] == "  stopped: interrupted (Ctrl-C); the steps measured are kept"
    assert summary[-1] == "results: %s; figures and tables: python -m plots %s" % (out, out)


def test_an_unreachable_server_is_a_clear_error():
    with pytest.raises(ServerGone, match="refused"):
        sweep.run_sweep(Options(["http://127.0.0.1:9/broadcast"], levels=[3], rates=[1], duration=0.2, pause=0))
