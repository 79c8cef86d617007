"""A run second by second, without sockets: sessions per broker, new ones, lateness percentiles."""

import collections

from loadtest.method import timeline
from loadtest.method.timeline import BEFORE, Timeline


class Clock:
    def __init__(self, now=100.0):
        self.now = now

    def __call__(self):
        return self.now


def test_lateness_keeps_ten_significant_bits():
    assert [timeline.coarse(us) for us in (1, 1023, 1024, 1025, 2047, 123456)] == [1, 1023, 1024, 1024, 2046, 123392]
    assert all(0 <= us - timeline.coarse(us) < us / 512.0 for us in range(1, 200000, 7))


def test_before_the_origin_everything_falls_in_one_second_before_the_first():
    clock = Clock(50.0)
    line = Timeline(clock)
    line.open(0)
    line.start(100.0)
    line.open(1)
    clock.now = 100.0
    line.open(1)
    line.record_value(5000)
    clock.now = 102.5
    line.end(1)
    report = line.report()
    assert report["opened"] == {BEFORE: {0: 1, 1: 1}, 0: {1: 1}}
    assert report["ended"] == {2: {1: 1}} and report["lateness"] == {0: {5000: 1}}


def test_merged_seconds_hold_the_sessions_at_each_broker_and_the_new_ones():
    first = {"opened": {BEFORE: {0: 3, 1: 3}, 2: {1: 2}}, "ended": {1: {0: 2}}, "lateness": {}}
    second = {"opened": {BEFORE: {0: 1}, 1: {1: 1}}, "ended": {}, "lateness": {0: {1000: 2}}}
    rows, _ = timeline.merge([first, second], brokers=2)
    assert [(r.second, r.connections, r.new_sessions) for r in rows] == [
        (0, (4, 3), (0, 0)), (1, (2, 4), (0, 1)), (2, (2, 6), (0, 2))]
    assert (rows[0].delivered, rows[0].p50_ms, rows[1].delivered, rows[1].p99_ms) == (2, 1.0, 0, None)
    assert len(timeline.merge([first], brokers=2, last=5)[0]) == 6


def test_percentiles_are_nearest_rank_over_every_process_added():
    one = {"opened": {}, "ended": {}, "lateness": {0: {1000: 98}}}
    two = {"opened": {}, "ended": {}, "lateness": {0: {2000: 1, 50000: 1}}}
    rows, lateness = timeline.merge([one, two], brokers=1)
    assert (rows[0].delivered, rows[0].p50_ms, rows[0].p99_ms, rows[0].max_ms) == (100, 1.0, 2.0, 50.0)
    assert timeline.percentile(collections.Counter({7: 1}), 99) == 7
    assert timeline.percentile({1: 1, 2: 1, 3: 1}, 50) == 2
    assert timeline.percentile({}, 50) is None
    assert timeline.within(lateness, 0, 3) == {1000: 98, 2000: 1, 50000: 1}


def _rows(seconds, brokers):
    return [timeline.Second(second, (0,) * brokers, (0,) * brokers, 0, None, None, None) for second in range(seconds)]


def test_behind_a_proxy_the_brokers_counts_stand_in_the_rows():
    count = timeline.BrokerCount
    counts = {
        BEFORE: [count(10, 10, 5.0), count(10, 12, 5.0)],
        0: [count(10, 10, 6.0), count(12, 14, 6.0)],
        # broker 0 stopped: holds none, opens none; broker 1 takes its clients
        1: [None, count(22, 24, 7.0)],
        # broker 0 back, a new process: all it has started is new
        2: [count(3, 3, 0.4), count(20, 24, 8.0)],
        # a second nobody answered in time for broker 1: it holds none that second
        3: [count(5, 5, 1.4), None],
        # its counter goes on from its last answer, not from zero
        4: [count(5, 5, 2.4), count(19, 25, 10.0)],
    }
    rows = timeline.counted_by_brokers(_rows(6, 2), counts)
    assert [row.connections for row in rows] == [(10, 12), (0, 22), (3, 20), (5, 0), (5, 19), (5, 19)]
    assert [row.new_sessions for row in rows] == [(0, 2), (0, 10), (3, 0), (2, 0), (0, 1), (0, 0)]


def test_what_a_late_read_counts_is_spread_over_the_seconds_it_skipped():
    count = timeline.BrokerCount
    counts = {
        BEFORE: [count(0, 0, 1.0), count(0, 0, 1.0)],
        0: [count(5, 5, 2.0), count(0, 0, 2.0)],
        # read late: seconds 1 and 2 skipped; broker 1 stopped and came back 1.5 s ago
        3: [count(12, 12, 5.0), count(7, 7, 1.5)],
    }
    rows = timeline.counted_by_brokers(_rows(4, 2), counts)
    assert [row.new_sessions for row in rows] == [(5, 0), (2, 0), (2, 3), (3, 4)]
    assert [row.connections for row in rows] == [(5, 0), (5, 0), (5, 0), (12, 7)]


def test_a_client_never_cut_counts_in_all_and_apart():
    clock = Clock(100.0)
    line = Timeline(clock)
    line.start(100.0)
    line.record_value(8192)
    line.uncut_clients.record_value(3000)
    report = line.report()
    assert report["lateness"] == {0: {8192: 1, 3000: 1}} and report["uncut"] == {0: {3000: 1}}
    assert timeline.uncut_lateness([report, report]) == {0: {3000: 2}}
