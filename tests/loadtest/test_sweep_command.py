"""``python -m loadtest --clients N`` as its user meets it, against real servers over loopback with
short steps: the header, where and why the sweep stops (the client starved, a slow server), the
summary, and ``python -m plots`` on the file it wrote.

The client is made the bottleneck for real: once it prints its first step, the test stops and
continues its process (SIGSTOP, SIGCONT) every few milliseconds, so its loop runs late however
idle the machine, while the broker has CPU to spare.
"""

import os
import signal
import subprocess
import sys
import threading

import pytest

from checkout import ROOT
import result_lines

RUN_TIMEOUT_S = 60
STOPPED_S, RUNNING_S = 0.04, 0.01


def start_command(url, out, *flags):
    return subprocess.Popen(
        [sys.executable, "-m", "loadtest", "--url", url, "--out", str(out), *flags],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process, on_line=lambda number: None):
    """``(stdout, stderr lines)`` of ``process`` once it exited; ``on_line(n)`` after its ``n``-th line on stderr."""
    lines = []
    try:
        for line in process.stderr:
            lines.append(line.rstrip("\n"))
            on_line(len(lines))
        stdout = process.stdout.read()
        process.wait(RUN_TIMEOUT_S)
    finally:
        process.kill()
    assert not any("Traceback" in line for line in lines), lines
    return stdout, lines


def check_header(lines, url, out):
    assert lines[0].startswith("sweeping %s (" % url), lines[0]
    assert lines[1].startswith("at most ") and "it stops sooner where the server is overloaded" in lines[1]
    assert lines[2].startswith("server CPU and RSS: measured, pid "), lines[2]
    assert lines[3] == "results: %s, step by step (Ctrl-C stops and keeps every step measured)" % out


def starve(pid, done):
    """Stop and continue process ``pid`` until ``done`` is set or it has exited."""
    try:
        while not done.is_set():
            os.kill(pid, signal.SIGSTOP)
            done.wait(STOPPED_S)
            os.kill(pid, signal.SIGCONT)
            done.wait(RUNNING_S)
    except ProcessLookupError:
        pass


def test_a_client_that_cannot_keep_up_stops_the_sweep_and_says_what_to_do(start_broker, tmp_path):
    broker = start_broker("--client-rate", "0").server
    out = tmp_path / "sweep.jsonl"
    process = start_command(broker.url, out, "--clients", "20", "--step-seconds", "0.3", "--pause", "0.05")
    done = threading.Event()
    starver = threading.Thread(target=starve, args=(process.pid, done))
    try:
        # The header is 4 lines, then the first step's: the client is starved from its second step on.
        stdout, lines = finish(process, lambda number: number == 5 and starver.start())
    finally:
        done.set()
        if starver.is_alive():
            starver.join()
    check_header(lines, broker.url, out)
    assert lines[4].startswith("level 20 rate 50/s: ") and "(step 1 of at most " in lines[4], lines[4]
    records = result_lines.read(out)
    assert records[1]["pid"] == broker.pid
    steps = [r for r in records if r["type"] == "step"]
    (level,) = [r for r in records if r["type"] == "level"]
    assert level["end"].startswith("client-bound: "), level
    assert all(step["client_bound"] for step in steps[1:]) and 2 <= len(steps) <= 3, steps
    assert all(step["server_cpu"] is not None for step in steps)
    stop = ("the load client, not the server, is the limit here: spread it with --procs or another machine; "
            "client-bound at ")
    assert any(line.startswith("level 20 stopped: " + stop) for line in lines), lines
    assert process.returncode == 0
    summary = stdout.splitlines()
    assert summary[0] == "20 clients, %d steps:" % len(steps)
    assert summary[-2].startswith("  stopped: " + stop)
    assert summary[-1] == "results: %s; figures and tables: python -m plots %s" % (out, out)
    assert any(line.startswith("  server at ") and "us of CPU per delivery" in line for line in summary), summary

    pytest.importorskip("matplotlib")
    drawn = subprocess.run([sys.executable, "-m", "plots", str(out), "-o", str(tmp_path / "figures")],
                           cwd=ROOT, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert drawn.returncode == 0, drawn.stderr
    assert "client-bound" in drawn.stdout
    assert {"rtt_mean.png", "rtt_p99.png", "summary.rst"} <= set(os.listdir(tmp_path / "figures"))


def test_a_slow_server_stops_the_sweep_overloaded(slow_server, tmp_path):
    """One message a step is back within 1.2 s; two, sent together, average more than 1.5 s."""
    server = slow_server(1.2)
    out = tmp_path / "sweep.jsonl"
    stdout, lines = finish(start_command(server.url, out, "--clients", "500", "--step-seconds", "0.5",
                                         "--pause", "0.1"))
    check_header(lines, server.url, out)
    records = result_lines.read(out)
    steps = [r for r in records if r["type"] == "step"]
    (level,) = [r for r in records if r["type"] == "level"]
    assert [step["overloaded"] for step in steps] == [False] * (len(steps) - 1) + [True], steps
    assert level["end"] == "overloaded: " + steps[-1]["overload_reason"]
    assert "level 500 stopped: the server is overloaded: " + steps[-1]["overload_reason"] in lines
    assert stdout.splitlines()[-2] == "  stopped: the server is overloaded: " + steps[-1]["overload_reason"]
