"""The method's rules and the table, without sockets."""

import collections
import io

import pytest

from loadtest import client, report, sweep


def test_rate_schedule_is_geometric_between_the_bounds():
    rates = sweep.rate_schedule()
    assert rates[0] == sweep.FIRST_RATE and rates[-1] == sweep.LAST_RATE
    assert rates == sorted(set(rates))
    assert all(b / a <= 2.01 for a, b in zip(rates, rates[1:]))
    assert len(rates) < 25


def step(**changes):
    base = {"dropped": 0, "drop_reasons": {}, "lost": 0, "end_reason": None,
            "rtt_ms": {"mean": 10.0}}
    base.update(changes)
    return base


def test_overload_rules():
    assert sweep.overload_reason(step()) is None
    assert "connection lost (reset by the server)" == sweep.overload_reason(
        step(dropped=2, drop_reasons={"reset by the server": 2}))
    assert "3 messages not back within 5 s" == sweep.overload_reason(step(lost=3))
    assert sweep.overload_reason(step(rtt_ms={"mean": 1500.0})) is None
    assert "mean round trip" in sweep.overload_reason(step(rtt_ms={"mean": 1501.0}))
    assert sweep.overload_reason(step(rtt_ms={"mean": None}, end_reason="every connection lost"))


def test_rtt_summary_from_an_hdr_histogram():
    histogram = client.new_histogram()
    for us in range(1000, 101000, 1000):
        histogram.record_value(us)
    rtt = sweep.rtt_summary(histogram)
    assert rtt["p50"] == pytest.approx(50.0, rel=1e-3)
    assert rtt["max"] == pytest.approx(100.0, rel=1e-3)
    assert rtt["p50"] <= rtt["p95"] <= rtt["p99"] <= rtt["max"]
    assert sweep.rtt_summary(client.new_histogram())["mean"] is None


def test_source_address_ranges():
    assert client.parse_source_addresses("127.0.0.2-127.0.0.4") == ["127.0.0.2", "127.0.0.3", "127.0.0.4"]
    assert client.parse_source_addresses("127.0.0.2,127.0.1.9") == ["127.0.0.2", "127.0.1.9"]


RECORD = {
    "server": "broker", "level": 100, "rate": 64, "server_msgs_per_s": 6400.0,
    "rtt_ms": {"mean": 2.5, "p50": 2.0, "p95": 4.0, "p99": 6.0, "max": 250.0},
    "lost": 0, "dropped": 0, "client_cpu": 0.95, "server_cpu": None,
    "server_cpu_us_per_msg": None, "client_bound": True, "overloaded": True,
    "overload_reason": "mean round trip 1600 ms > 1500 ms",
}


def test_table_marks_client_bound_and_overloaded_steps():
    lines = report.format_table([RECORD]).splitlines()
    assert lines[0].split()[:3] == ["server", "clients", "rate/s"]
    assert "6,400" in lines[2] and "95%" in lines[2] and "250" in lines[2]
    assert "CLIENT-BOUND; overloaded: mean round trip" in lines[2]


def test_status_off_a_terminal_is_one_line_per_step():
    stream = io.StringIO()
    status = report.StatusLine(stream)
    status.progress({"phase": "step", "level": 100, "rate": 64, "elapsed": 1.0, "duration": 10})
    status.step(RECORD)
    status.message("level 100 ended: sweep done")
    assert stream.getvalue().splitlines() == [
        "level 100 rate 64/s: 6,400 msg/s, rtt mean 2.5 p99 6.0 ms, client cpu 95% CLIENT-BOUND",
        "level 100 ended: sweep done",
    ]


class Pending:
    """Just what the loss rules read from a connection."""

    def __init__(self, pending, alive=True):
        self.pending = pending
        self.alive = alive


def test_a_message_older_than_the_loss_limit_ends_the_step():
    now = client.now_us()
    old, fresh = now - 6_000_000, now - 1_000_000
    conn = Pending({1: old, 2: fresh})
    answered = Pending({})
    log = collections.deque([(old - 1, answered, 7), (old, conn, 1), (fresh, conn, 2)])
    assert client.step_end_reason([conn, answered], log) == "a message not back within 5 s"
    assert log[0] == (old, conn, 1)
    assert client.lost_messages(log, now - 5_000_000) == 1
    del conn.pending[1]
    assert client.step_end_reason([conn], log) is None
    assert client.step_end_reason([Pending({}, alive=False)], collections.deque()) == "every connection lost"
