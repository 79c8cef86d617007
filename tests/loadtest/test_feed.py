"""python -m loadtest feed: real clusters, a real audience, briefly."""

import subprocess
import sys

from loadtest import records
from checkout import ROOT
import result_lines



def feed(tmp_path, *argv):
    """The records of one run of the command (as its own process), by type; it must exit 0."""
    out = tmp_path / "feed.jsonl"
    done = subprocess.run([sys.executable, "-m", "loadtest", "feed", "--out", str(out), *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [records.parse(line) for line in result_lines.read(str(out))]
    by_type = {}
    for line in lines:
        by_type.setdefault(line.TYPE, []).append(line)
    return by_type


def test_every_listener_of_every_broker_gets_every_message_once(tmp_path, redis_installed):
    found = feed(tmp_path, "--servers", "cluster-cpython", "--brokers", "3", "--clients", "60", "--procs", "2", "--rate", "10", "--duration", "2",
                 "--sample", "1")
    summary, = found["feed"]
    # Publishing stops at --duration: a loaded machine publishes fewer than 20 (16 once, beside the
    # side-by-side tier); every listener must have every one of them.
    assert (summary.brokers, summary.connected) == (3, 60) and 10 <= summary.published <= 20
    assert (summary.received, summary.short, summary.extra, summary.dropped) == (60 * summary.published, 0, 0, 0)
    assert summary.delivery_ms["max"] is not None and summary.delivery_ms["max"] < 5000
    assert summary.end == "completed"
    samples = found["feed_sample"]
    assert sum(s.published for s in samples) == summary.published
    assert sum(s.received for s in samples) == 60 * summary.published
    assert set(samples[0].rss_kb) == set(samples[0].cpu) == {"broker1", "broker2", "broker3", "redis"}
    assert min(s.client_cpu for s in samples) >= 0 and max(s.client_cpu for s in samples) > 0
    (server,) = found["server"]
    assert (server.server, server.pid) == ("cluster-cpython", None)


def test_a_broker_runs_alone_without_redis(tmp_path):
    found = feed(tmp_path, "--servers", "broker-cpython", "--clients", "20", "--rate", "5", "--duration", "1", "--sample", "1")
    summary, = found["feed"]
    assert (summary.connected, summary.received, summary.short) == (20, 20 * summary.published, 0)
    assert set(summary.final_rss_kb) == {"broker1"}


def test_every_add_to_the_counter_reaches_every_listener_of_every_broker_once(tmp_path, redis_installed):
    found = feed(tmp_path, "--servers", "cluster-cpython", "--brokers", "3", "--clients", "30", "--rate", "10",
                 "--duration", "2", "--sample", "1", "--publish", "counter")
    summary, = found["feed"]
    # Publishing stops at --duration, adds still due or not: a loaded machine may make fewer than 20.
    added = summary.published
    assert added > 0 and (summary.publish, summary.connected) == ("counter", 30)
    assert (summary.received, summary.short, summary.extra, summary.dropped) == (30 * added, 0, 0, 0)
    assert summary.counter_totals == {"broker1": str(added), "broker2": str(added), "broker3": str(added)}
    assert summary.delivery_ms["p50"] is None  # a counter's message carries no publish time
    assert 0 < summary.publish_ms["p50"] <= summary.publish_ms["p99"] < 10000
    assert set(summary.cpu_s) == {"broker1", "broker2", "broker3", "redis"} and summary.cpu_s["broker1"] > 0
    assert sum(s.received for s in found["feed_sample"]) == 30 * added


def test_a_keyed_feed_is_timed_as_the_plain_one(tmp_path):
    found = feed(tmp_path, "--servers", "broker-cpython", "--clients", "20", "--rate", "10", "--duration", "1",
                 "--sample", "1", "--publish", "keyed")
    summary, = found["feed"]
    # Publishing stops at --duration, messages still due or not: a loaded machine may publish fewer than 10.
    assert summary.published > 0
    assert (summary.publish, summary.received, summary.short, summary.counter_totals) == (
        "keyed", 20 * summary.published, 0, {})
    assert summary.delivery_ms["p50"] is not None and summary.publish_ms["p50"] is not None
