"""The method's rules, without sockets or clocks."""

import collections
import dataclasses
import pickle

import pytest

from loadtest.method import rules
from loadtest.method.rules import End


@pytest.mark.parametrize("level", [1, 2, 25, 100, 1000, 10000])
def test_rate_schedule_rises_geometrically_from_a_thousand_deliveries_to_the_cap(level):
    rates = rules.rate_schedule(level)
    assert rates[0] == max(1, round(rules.FIRST_DELIVERIES_PER_S / level))
    assert rates[-1] == rules.rate_cap(level)
    assert rates == sorted(set(rates))
    assert all(b / a <= 2.01 for a, b in zip(rates, rates[1:]))
    assert len(rates) <= 40


def test_the_cap_bounds_both_the_messages_sent_and_the_deliveries():
    assert rules.rate_cap(1) == rules.rate_cap(25) == rules.MAX_RATE
    assert rules.rate_cap(10000) * 10000 == rules.MAX_DELIVERIES_PER_S
    assert rules.rate_cap(rules.MAX_DELIVERIES_PER_S * 2) == 1
    assert rules.rate_schedule(10000)[-3:] == [512, 724, 1000]


def merged(**changes):
    base = dict(duration_s=1.0, sent=10, received=100, lost=0, dropped=0, reopened=0, drop_reasons={},
                histogram=rules.new_histogram(), client_cpu=0.5, loop_lag_ms={"mean": 1.0, "max": 2.0}, end=None)
    base.update(changes)
    return rules.Merged(**base)


def test_overload_rules():
    assert rules.overload_reason(merged(), 10.0) is None
    assert "connection lost (reset by the server)" == rules.overload_reason(
        merged(dropped=2, drop_reasons={"reset by the server": 2}), 10.0)
    assert "3 messages not back within 5 s" == rules.overload_reason(merged(lost=3), 10.0)
    assert rules.overload_reason(merged(), 1500.0) is None
    assert "mean round trip" in rules.overload_reason(merged(), 1501.0)
    assert rules.overload_reason(merged(end=End.ALL_LOST), None) == "every connection lost"


def test_rtt_summary_from_an_hdr_histogram():
    histogram = rules.new_histogram()
    for us in range(1000, 101000, 1000):
        histogram.record_value(us)
    rtt = rules.rtt_summary(histogram)
    assert rtt["p50"] == pytest.approx(50.0, rel=1e-3)
    assert rtt["max"] == pytest.approx(100.0, rel=1e-3)
    assert rtt["p50"] <= rtt["p95"] <= rtt["p99"] <= rtt["max"]
    assert rules.rtt_summary(rules.new_histogram())["mean"] is None


class Pending:
    """Just what the loss rules read from a client."""

    def __init__(self, pending, alive=True):
        self.pending = pending
        self.alive = alive


def test_a_message_older_than_the_loss_limit_ends_the_step():
    now = 10 ** 12
    old, fresh = now - 6_000_000, now - 1_000_000
    conn = Pending({1: old, 2: fresh})
    answered = Pending({})
    log = collections.deque([(old - 1, answered, 7), (old, conn, 1), (fresh, conn, 2)])
    assert rules.step_end([conn, answered], log, now) is End.LATE
    assert End.LATE.value == "a message not back within 5 s"
    assert log[0] == (old, conn, 1)
    assert rules.lost_messages(log, now - 5_000_000) == 1
    del conn.pending[1]
    assert rules.step_end([conn], log, now) is None
    assert rules.step_end([Pending({}, alive=False)], collections.deque(), now) is End.ALL_LOST


def test_messages_are_due_evenly_over_the_step():
    assert rules.messages_due(0.0, 10, 20) == 1
    assert rules.messages_due(0.95, 10, 20) == 10
    assert rules.messages_due(5.0, 10, 20) == 20


def test_split_shares_a_step_exactly():
    assert rules.split(3, [50, 50]) == [2, 1] or rules.split(3, [50, 50]) == [1, 2]
    assert sum(rules.split(7, [3, 3, 4])) == 7
    assert rules.split(5, [0, 10]) == [0, 5]
    assert rules.split(5, [0, 0]) == [0, 0]


def partial(**changes):
    histogram = rules.new_histogram()
    histogram.record_value(changes.pop("rtt_us", 1000))
    base = dict(duration_s=1.0, sent=5, received=50, lost=0, dropped=0, reopened=0, drop_reasons={},
                histogram=histogram,
                cpu_s=0.2, loop_lag_ms={"mean": 0.5, "max": 3.0}, end=None)
    base.update(changes)
    return rules.Partial(**base)


def test_partials_of_client_groups_add_up_to_one_step():
    total = rules.merge_partials([
        partial(duration_s=1.1, drop_reasons={"refused": 1}, dropped=1, rtt_us=2000, reopened=7),
        partial(cpu_s=0.5, loop_lag_ms={"mean": 2.0, "max": 1.0}, drop_reasons={"refused": 2, "timeout": 1},
                dropped=3, end=End.LATE, reopened=5),
    ])
    assert (total.duration_s, total.sent, total.received, total.dropped) == (1.1, 10, 100, 4)
    assert total.reopened == 12  # every group's clients' reopened streams and polls
    assert total.drop_reasons == {"refused": 3, "timeout": 1}
    assert total.histogram.get_total_count() == 2
    assert total.client_cpu == 0.5  # the busiest group
    assert total.loop_lag_ms == {"mean": 2.0, "max": 3.0}
    assert total.end is End.LATE


def test_samples_of_listener_groups_add_up():
    histograms = [rules.new_histogram(), rules.new_histogram()]
    histograms[0].record_value(1000)
    histograms[1].record_value(3000)
    total = rules.merge_feed([
        rules.FeedPartial(received=10, histogram=histograms[0], alive=5, drop_reasons={}, short=0, extra=1,
                           cpu_s=0.5),
        rules.FeedPartial(received=7, histogram=histograms[1], alive=3, drop_reasons={"timeout": 2}, short=4,
                           extra=0, cpu_s=0.25),
    ])
    assert (total.received, total.alive, total.drop_reasons, total.short, total.extra) == (17, 8, {"timeout": 2}, 4, 1)
    assert total.cpu_s == 0.75  # client processes sharing a core: their CPU adds up
    assert total.histogram.get_total_count() == 2 and total.histogram.get_max_value() >= 3000


def test_a_step_record_says_overloaded_and_client_bound():
    figures = rules.ServerFigures.of(cpu_s=0.5, duration_s=2.0, received=1000, rss_kb=4096)
    assert (figures.cpu, figures.rss_kb, figures.cpu_us_per_msg) == (0.25, 4096, 500.0)
    step = rules.step_record("broker", "xhr-polling", 10, 5, merged(client_cpu=0.95, lost=2, reopened=3), figures)
    assert (step.server, step.transport, step.level, step.rate, step.server_msgs_per_s, step.reopened) == (
        "broker", "xhr-polling", 10, 5, 100.0, 3)
    assert (step.server_cpu, step.server_rss_kb, step.server_cpu_us_per_msg) == (0.25, 4096, 500.0)
    assert step.client_bound and step.overloaded
    assert step.overload_reason == "2 messages not back within 5 s"
    lagging = rules.step_record("broker", "websocket", 10, 5, merged(loop_lag_ms={"mean": 10.0, "max": 30.0}),
                                 rules.ServerFigures())
    assert lagging.client_bound and not lagging.overloaded and lagging.server_cpu is None


def test_ends_are_written_and_read_as_the_text_results_files_carry():
    assert End.SWEEP_DONE.text() == "sweep done"
    assert End.OVERLOADED.text("mean round trip 1600 ms > 1500 ms") == "overloaded: mean round trip 1600 ms > 1500 ms"
    for text, end in [("sweep done", End.SWEEP_DONE), ("completed", End.COMPLETED),
                      ("overloaded: connection lost (refused)", End.OVERLOADED),
                      ("connections failed: 3 refused", End.CONNECTIONS_FAILED),
                      ("server gone: the server died: process 7 exited", End.SERVER_GONE),
                      ("interrupted", End.INTERRUPTED), ("a message not back within 5 s", End.LATE)]:
        assert End.of(text) is end
    assert End.of("something else") is None


def test_a_broken_step_is_the_clients_limit_only_when_the_client_was_saturated_and_the_server_not():
    assert not rules.past_realtime(False, rules.REALTIME_MS)
    assert rules.past_realtime(False, rules.REALTIME_MS + 1) and rules.past_realtime(True, 1.0)
    assert rules.past_realtime(False, None)
    assert rules.client_limited(True, 0.5) and rules.client_limited(True, None)
    assert not rules.client_limited(True, rules.SERVER_SATURATED_CPU)
    assert not rules.client_limited(False, 0.1)


def test_a_level_ends_overloaded_or_client_bound_by_its_last_step():
    server_bound = rules.step_record("s", "websocket", 10, 1131, merged(client_cpu=0.95, lost=2),
                                      rules.ServerFigures(cpu=0.97))
    assert rules.level_end(server_bound) == "overloaded: 2 messages not back within 5 s"
    client_bound = rules.step_record("s", "websocket", 10, 1131, merged(client_cpu=0.95, lost=2),
                                      rules.ServerFigures(cpu=0.6))
    text = rules.level_end(client_bound)
    assert End.of(text) is End.CLIENT_BOUND
    assert text == ("client-bound: at 1,131 msgs/s (client CPU 95 %, loop lag 1.0 ms; server CPU 60 %): "
                    "2 messages not back within 5 s")
    unknown = rules.step_record("s", "websocket", 10, 5, merged(loop_lag_ms={"mean": 12.0, "max": 30.0}, lost=1),
                                 rules.ServerFigures())
    assert "server CPU unknown" in rules.level_end(unknown)


def test_a_level_that_reaches_the_cap_says_so():
    text = rules.cap_end(10000, 1000)
    assert text == "the sweep's cap reached: 1,000 msgs/s x 10000 clients = 10,000,000 deliveries/s"
    assert End.of(text) is End.CAP_REACHED


def step_at(rtt_ms, client_cpu, server_cpu, lost=0):
    histogram = rules.new_histogram()
    histogram.record_value(int(rtt_ms * 1000))
    return rules.step_record("s", "websocket", 1000, 181, merged(histogram=histogram, client_cpu=client_cpu, lost=lost),
                             rules.ServerFigures(cpu=server_cpu))


def test_a_level_ends_after_two_client_bound_steps_in_a_row_within_realtime():
    healthy, bound = step_at(5.0, 0.5, 0.4), step_at(5.0, 0.95, 0.6)
    assert not rules.ends_sweep([healthy]) and not rules.ends_sweep([healthy, bound])
    assert not rules.ends_sweep([bound, healthy]) and not rules.ends_sweep([bound])
    assert rules.ends_sweep([healthy, bound, bound])
    assert rules.level_end(bound) == ("client-bound: at 181 msgs/s (client CPU 95 %, loop lag 1.0 ms; server CPU "
                                      "60 %): 2 steps in a row client-bound")


def test_a_saturated_server_keeps_a_client_bound_sweep_going_until_it_breaks():
    both = step_at(5.0, 0.95, rules.SERVER_SATURATED_CPU)
    assert not rules.ends_sweep([both, both, both])
    assert rules.ends_sweep([both, step_at(5.0, 0.95, 0.97, lost=1)])
    assert rules.ends_sweep([step_at(rules.REALTIME_MS + 1, 0.95, None)]), "past realtime, the client's limit at once"
    assert not rules.ends_sweep([step_at(rules.REALTIME_MS + 1, 0.5, 0.5)]), "past realtime, on to overload"


def test_a_partial_crosses_a_pipe_with_its_histogram_whole():
    """A worker process sends its measurements pickled, the histogram HDR-encoded."""
    histogram = rules.new_histogram()
    for value in (1200, 3400, 99000):
        histogram.record_value(value)
    part = rules.FeedPartial(received=3, histogram=histogram, alive=2, drop_reasons={"timeout": 1}, short=0,
                             extra=0, cpu_s=0.5)
    crossed = pickle.loads(pickle.dumps(part))
    assert dataclasses.replace(crossed, histogram=None) == dataclasses.replace(part, histogram=None)
    assert crossed.histogram.get_total_count() == 3
    assert crossed.histogram.get_max_value() == histogram.get_max_value()
