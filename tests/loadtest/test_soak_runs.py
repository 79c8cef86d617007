"""``python -m loadtest soak`` against a real broker over loopback, and its rules without sockets."""

import signal
import subprocess
import sys
import time

import pytest

from loadtest import records as schema
from loadtest.method import memory_verdict
from checkout import ROOT
import result_lines




SHORT = ["--clients", "10", "--rate", "20", "--sample", "1", "--warm-up-seconds", "1"]


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
    records = result_lines.read(str(out))
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
    for key, value in memory_verdict.growth([(s["elapsed_s"], s["server_rss_kb"]) for s in samples], 1.0).items():
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
    records = result_lines.read(str(out))
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
        assert wave["held_rss_kb"] > 0 and wave["rss_kb"] > 0 and wave["open_cpu_us"] >= 0
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
        while not (out.exists() and by_type(result_lines.read(str(out)), "soak_sample")):
            assert process.poll() is None and time.monotonic() < deadline, process.communicate()
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = finish(process, 20)
    finally:
        process.kill()
    assert process.returncode == 130
    assert "Traceback" not in stderr and "interrupted" in stderr
    records = result_lines.read(str(out))
    assert records[-1]["type"] == "soak" and records[-1]["end"] == "interrupted"
    assert records[-1]["samples"] == len(by_type(records, "soak_sample")) >= 1
