"""What a person sees: the table at the end, the status line off a terminal."""

import dataclasses
import io

from loadtest import records
from loadtest.results import console

RECORD = records.Step(
    server="broker", transport="websocket", level=100, rate=64, duration_s=10.0, sent=640, received=64000, server_msgs_per_s=6400.0,
    rtt_ms={"mean": 2.5, "p50": 2.0, "p95": 4.0, "p99": 6.0, "max": 250.0},
    lost=0, dropped=0, reopened=0, client_cpu=0.95, loop_lag_ms={"mean": 0.5, "max": 4.0}, server_cpu=None,
    server_rss_kb=None,
    server_cpu_us_per_msg=None, client_bound=True, overloaded=True,
    overload_reason="mean round trip 1600 ms > 1500 ms",
)


def test_table_marks_client_bound_and_overloaded_steps():
    lines = console.format_table([RECORD]).splitlines()
    assert lines[0].split()[:3] == ["server", "clients", "rate/s"]
    assert "6,400" in lines[2] and "95%" in lines[2] and "250" in lines[2]
    assert "CLIENT-BOUND; overloaded: mean round trip" in lines[2]


def test_status_off_a_terminal_is_one_line_per_step():
    stream = io.StringIO()
    status = console.StatusLine(stream)
    status.progress({"phase": "step", "level": 100, "rate": 64, "elapsed": 1.0, "duration": 10})
    status.step(RECORD)
    status.message("level 100 ended: sweep done")
    assert stream.getvalue().splitlines() == [
        "level 100 rate 64/s: 6,400 msg/s, rtt mean 2.5 p99 6.0 ms, client cpu 95% CLIENT-BOUND",
        "level 100 ended: sweep done",
    ]


def sample(**changes):
    figures = dict(server_rss_kb=51200, server_msgs_per_s=12345.0, rtt_ms={"p99": 3.25}, lost=0, dropped=0)
    step = dataclasses.replace(RECORD, **dict(figures, **changes))
    return records.SoakSample.of_step(step, 60.0)


def test_soak_status_off_a_terminal_is_one_line_per_sample():
    stream = io.StringIO()
    status = console.StatusLine(stream)
    status.soak("broker-pypy", 130, None)
    status.soak("broker-pypy", 125, sample(), fresh=True)
    status.soak("broker-pypy", 124, sample())
    status.soak("broker-pypy", 120, sample(lost=3, dropped=1), fresh=True)
    assert stream.getvalue().splitlines() == [
        "broker-pypy  soak  2:05 left  RSS 50.0 MB  12,345 msg/s  p99 3.2 ms",
        "broker-pypy  soak  2:00 left  RSS 50.0 MB  12,345 msg/s  p99 3.2 ms  lost 3  dropped 1",
    ]


BURST = {
    "server": "broker-pypy", "attempts": 5000, "burst_seconds": 1.0, "sent_s": 1.02, "window_s": 1.31,
    "sessions_admitted": 980, "admitted_bound": 1156,
    "answers": {"info": {"admitted": 310}},
    "totals": {"admitted": 1290, "retry_after": 3710, "bare_503": 0, "other": 0, "error": 0},
    "quiet": {"p50_ms": 1.04, "p99_ms": 1.52, "max_ms": 2.1},
    "during_burst": {"p50_ms": 2.0, "p99_ms": 140.0, "max_ms": 152.3},
    "verdict": {"retry_after": True, "within_rate": True, "answered": True, "canary_p99": False,
                "no_stall": False, "nothing_lost": True, "passed": False},
}


def test_a_burst_is_one_line_naming_the_checks_it_failed():
    assert console.burst_line(BURST) == (
        "broker-pypy burst: 5,000 attempts over 1 s (sent in 1.02 s, answered by 1.31 s): 980 sessions admitted "
        "(at most 1,156), 310 /info passed; 3,710 refused with Retry-After, 0 without; 0 other, 0 errors; "
        "canaries p50/p99/max 1.0/1.5/2.1 ms quiet, 2.0/140/152 ms during: FAILED (canary_p99, no_stall)")
    passed = dict(BURST, verdict={"passed": True}, during_burst=None)
    assert console.burst_line(passed).endswith("1.0/1.5/2.1 ms quiet, - during: passed")


def test_a_burst_whose_attacker_failed_says_so():
    line = console.burst_line({"server": "broker-cpython", "attempts": 500, "burst_seconds": 0.5,
                               "attacker": {"failed": 1}})
    assert line == "broker-cpython burst: 500 attempts over 0.5 s: the attacker failed (exit 1)"
