"""``python -m loadtest soak`` against a real broker over loopback, and its rules without sockets."""

import os
import signal
import subprocess
import sys
import time

import pytest

from loadtest import memory, results, soak
from loadtest import records as schema

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHORT = ["--clients", "10", "--rate", "20", "--sample", "1", "--warm-up", "1"]


def run_soak(server, out, *extra):
    return subprocess.Popen(
        [sys.executable, "-m", "loadtest", "soak", "--url", server.url, "--server-pid", str(server.pid),
         "--label", "broker", "--out", str(out)] + SHORT + list(extra),
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def finish(process, timeout=60):
    try:
        return process.communicate(timeout=timeout)
    finally:
        process.kill()


def by_type(records, kind):
    return [r for r in records if r["type"] == kind]


def test_a_short_soak_samples_the_broker_and_sums_it_up(broker_server, tmp_path):
    out = tmp_path / "soak.jsonl"
    process = run_soak(broker_server, out, "--duration", "4")
    stdout, stderr = finish(process)
    assert process.returncode == 0, stderr
    records = results.read(str(out))
    assert [r["type"] for r in records] == ["run", "server"] + ["soak_sample"] * 4 + ["soak"]
    assert [schema.parse(r).as_dict() for r in records] == records
    server = records[1]
    assert (server["server"], server["pid"], server["cpu"]) == ("broker", broker_server.pid, 0)
    assert server["runtime"].startswith(("CPython ", "PyPy "))
    samples = by_type(records, "soak_sample")
    assert [s["elapsed_s"] for s in samples] == sorted(s["elapsed_s"] for s in samples)
    for sample in samples:
        assert (sample["server"], sample["level"], sample["rate"], sample["sent"]) == ("broker", 10, 20.0, 20)
        assert sample["received"] == sample["sent"] * 10
        assert sample["lost"] == sample["dropped"] == 0
        assert sample["server_rss_kb"] > 0 and sample["server_cpu"] is not None
        assert 0 < sample["rtt_ms"]["p50"] <= sample["rtt_ms"]["p99"]
        assert sample["server_msgs_per_s"] == pytest.approx(sample["received"] / sample["duration_s"], rel=0.01)
    # The broker's /stats is read from the start of the load: nothing held back at this load.
    for sample in samples[1:]:
        held = sample["server_held"]
        assert (held["behind"], held["unsent_kb"]) == (0, 0)
        assert held["gc_used_kb"] is None or held["gc_used_kb"] > 0
    (summary,) = by_type(records, "soak")
    assert summary["samples"] == 4 and summary["duration_s"] == samples[-1]["elapsed_s"]
    assert (summary["clients"], summary["rate"], summary["sample_s"], summary["warmup_s"]) == (10, 20.0, 1.0, 1.0)
    assert summary["rss_after_warmup_kb"] == samples[0]["server_rss_kb"]
    assert summary["final_rss_kb"] == samples[-1]["server_rss_kb"]
    for key, value in memory.growth([(s["elapsed_s"], s["server_rss_kb"]) for s in samples], 1.0).items():
        assert summary[key] == value, key
    assert summary["verdict"] in ("flat", "growing")
    assert (summary["lost"], summary["dropped"], summary["end"]) == (0, 0, "completed")
    assert "broker  soak  0:00 left  RSS " in stderr
    assert "Traceback" not in stderr and "Task was destroyed" not in stderr, stderr
    assert "broker: RSS " in stderr and ": %s (completed)" % summary["verdict"] in stderr


def test_churn_waves_leave_the_broker_at_its_baseline(broker, tmp_path):
    out = tmp_path / "churn.jsonl"
    process = run_soak(broker.server, out, "--duration", "2", "--churn", "--churn-waves", "2",
                       "--churn-size", "5", "--churn-hold", "0.2")
    _, stderr = finish(process)
    assert process.returncode == 0, stderr
    records = results.read(str(out))
    assert [r["type"] for r in records[-3:]] == ["churn_wave", "churn_wave", "churn"]
    assert [schema.parse(r).as_dict() for r in records] == records
    waves = by_type(records, "churn_wave")
    (churned,) = by_type(records, "churn")
    baseline = churned["baseline_connections"]
    assert baseline == 0
    for number, wave in enumerate(waves, 1):
        assert wave["wave"] == number
        assert wave["opened"] == {"websocket": 5, "xhr_streaming": 5, "xhr_polling": 5}
        assert wave["failed"] == {}
        assert wave["held_rss_kb"] > 0 and wave["rss_kb"] > 0
    assert waves[0]["held_connections"] == baseline + 15
    assert waves[1]["held_connections"] >= baseline + 15
    assert churned["settled"] is True
    assert churned["final_connections"] == baseline
    assert churned["verdict"] in ("flat", "growing")
    assert (churned["waves"], churned["size"]) == (2, 5)
    assert broker.stats()["connections_total"] == baseline


def test_ctrl_c_keeps_the_samples_and_sums_them_up(broker_server, tmp_path):
    out = tmp_path / "soak.jsonl"
    process = run_soak(broker_server, out, "--duration", "60")
    try:
        deadline = time.monotonic() + 30
        while not (out.exists() and by_type(results.read(str(out)), "soak_sample")):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = finish(process, 20)
    finally:
        process.kill()
    assert process.returncode == 130
    assert "Traceback" not in stderr and "interrupted" in stderr
    records = results.read(str(out))
    assert records[-1]["type"] == "soak" and records[-1]["end"] == "interrupted"
    assert records[-1]["samples"] == len(by_type(records, "soak_sample")) >= 1


@pytest.mark.parametrize("argv, message", [
    (["--duration", "60", "--warm-up", "60"], "--warm-up (60 s) must be shorter than --duration (60 s)"),
    (["--duration", "60", "--warmup", "60"], "--warm-up (60 s) must be shorter than --duration (60 s)"),
    (["--duration", "5", "--warm-up", "1", "--sample", "10"], "--sample (10 s) must not be longer"),
    (["--url", "http://127.0.0.1:8080/broadcast"], "--url needs --server-pid"),
    (["--url", "http://10.0.0.1:8080/broadcast", "--server-pid", "1"], "only loopback servers"),
    (["--server-pid", "1"], "--server-pid and --label go with --url"),
    (["--servers", "sockjs-deno"], "unknown server sockjs-deno"),
    (["--churn-size", "0"], "argument --churn-size: must be 1 or more"),
    (["--warm-up", "-1"], "argument --warm-up/--warmup: must be a number of 0 or more"),
])
def test_bad_arguments_are_refused_before_anything_runs(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        soak.main(argv + ["--out", str(tmp_path / "r.jsonl")])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_held_figures_are_the_buffered_bytes_and_the_gc_heap_in_kib():
    pypy = {"slow_consumers": {"behind": 2, "unsent_bytes": 10240, "max_buffer": 1 << 20},
            "gc": {"major_started": 1, "major_finished": 1,
                   "heap": {"used_bytes": 64 << 20, "live_bytes": None}}}
    assert soak.held_figures(pypy) == {"behind": 2, "unsent_kb": 10, "gc_used_kb": 65536, "gc_live_kb": None}
    cpython = {"slow_consumers": {"behind": 0, "unsent_bytes": 0}, "gc": {"freezes": 3}}
    assert soak.held_figures(cpython) == {"behind": 0, "unsent_kb": 0, "gc_used_kb": None, "gc_live_kb": None}
    assert soak.held_figures({"connections_total": 0}) == dict.fromkeys(["behind", "unsent_kb", "gc_used_kb",
                                                                          "gc_live_kb"])
    assert soak.held_figures(None) is None


def test_the_duration_is_rounded_up_to_whole_samples():
    assert soak.samples_for(600, 5) == 120
    assert soak.samples_for(601, 5) == 121
    assert soak.samples_for(0.3, 1) == 1
    assert soak.samples_for(0.3, 0.1) == 3
