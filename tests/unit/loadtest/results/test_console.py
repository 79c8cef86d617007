"""What a person sees: a sweep's header, progress and summary, the status line off a terminal."""

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


def level(end, at=100):
    return records.Level(server="broker", transport="websocket", level=at, end=end)


def sweep_records(*steps_and_end):
    run = records.Run(started="2026-01-01T00:00:00+00:00", command=["python", "-m", "loadtest"], client={},
                      machine={}, url="http://127.0.0.1:8080/broadcast", transport="websocket")
    return [run, records.Server(server="broker", runtime="CPython 3.11.7", pid=7, cpu=None, tls=False)] + list(
        steps_and_end)


def step(rate, mean, **changes):
    figures = dict(rate=rate, server_msgs_per_s=rate * 100.0, client_bound=False, overloaded=False,
                   overload_reason=None, rtt_ms={"mean": mean, "p50": mean, "p95": mean, "p99": 2 * mean,
                                                 "max": 3 * mean})
    return dataclasses.replace(RECORD, **dict(figures, **changes))


def test_a_level_end_is_said_as_a_sentence_the_clients_limit_with_what_to_do():
    assert console.level_end_line("client-bound: at 91 msgs/s (client CPU 95 %): 2 steps in a row client-bound") == (
        "the load client, not the server, is the limit here: spread it with --procs or another machine; "
        "client-bound at 91 msgs/s (client CPU 95 %): 2 steps in a row client-bound")
    assert console.level_end_line("overloaded: 3 messages not back within 5 s") == (
        "the server is overloaded: 3 messages not back within 5 s")
    assert console.level_end_line("interrupted") == "interrupted (Ctrl-C); the steps measured are kept"
    assert console.level_end_line("sweep done") == "sweep done"


def test_a_sweeps_header_says_what_runs_how_long_at_most_and_where_its_results_go():
    header = console.sweep_header("http://127.0.0.1:8080/broadcast (CPython 3.11.7) over websocket",
                                  [(1000, [1, 2, 3]), (2000, [1, 2])], 6.0, "measured, pid 7 (python3.11)",
                                  "results/x.jsonl")
    assert header.splitlines() == [
        "sweeping http://127.0.0.1:8080/broadcast (CPython 3.11.7) over websocket: 1000, 2000 clients, "
        "1 to 3 msgs/s, 6 s a step with its pause",
        "at most 5 steps, 0:30 and the connecting; it stops sooner where the server is overloaded or the client "
        "is the limit",
        "server CPU and RSS: measured, pid 7 (python3.11)",
        "results: results/x.jsonl, step by step (Ctrl-C stops and keeps every step measured)"]
    assert console.sweep_progress(2, 5, 6.0) == "step 2 of at most 5, at most 0:18 left"


def test_a_sweeps_summary_names_the_knee_the_round_trips_the_cost_the_stop_and_the_plot():
    steps = [step(1, 1.0, server_cpu=0.01, server_cpu_us_per_msg=4.0, server_rss_kb=40960),
             step(2, 2.0, server_cpu=0.02, server_cpu_us_per_msg=4.5, server_rss_kb=40960),
             step(3, 300.0, client_bound=True)]
    text = console.sweep_summary(sweep_records(*steps, level("client-bound: at 3 msgs/s (...): mean round trip 300 ms"
                                                             " > 200 ms")), "results/x.jsonl")
    assert text.splitlines() == [
        "100 clients, 3 steps:",
        "  knee: 200 deliveries/s within realtime (mean round trip <= 200 ms), at 2 msgs/s sent; not the "
        "server's limit, which lies above",
        "  round trip p50/p99: 1.0/2.0 ms at 1 msgs/s, 2.0/4.0 ms at 2 msgs/s, 300/600 ms at 3 msgs/s",
        "  server at 2 msgs/s: 4.50 us of CPU per delivery, CPU 2%, RSS 40.0 MB",
        "  stopped: the load client, not the server, is the limit here: spread it with --procs or another machine; "
        "client-bound at 3 msgs/s (...): mean round trip 300 ms > 200 ms",
        "results: results/x.jsonl; figures and tables: python -m plots results/x.jsonl"]


def test_a_summary_says_when_the_servers_cost_is_unknown_and_a_level_was_cut_short():
    lines = console.sweep_summary(sweep_records(step(1, 1.0)), "r.jsonl").splitlines()
    assert lines[3] == ("  server CPU and RSS: unknown: give --server-pid (no process of this user was found "
                        "listening where --url points)")
    assert lines[4] == "  stopped: the run ended before the level did"
    assert console.sweep_summary(sweep_records(), "r.jsonl").splitlines()[0] == "no step measured"


def test_status_off_a_terminal_says_how_far_the_sweep_is():
    stream = io.StringIO()
    console.StatusLine(stream).step(dataclasses.replace(RECORD, server_cpu=0.42), "step 2 of at most 5, at most 0:18 left")
    assert stream.getvalue() == ("level 100 rate 64/s: 6,400 msg/s, rtt mean 2.5 p99 6.0 ms, client cpu 95%, "
                                 "server cpu 42% CLIENT-BOUND  (step 2 of at most 5, at most 0:18 left)\n")
