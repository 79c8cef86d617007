"""The rooms runs in the summary: a line per load, its runs by number of rooms, and a row each."""

from loadtest import records
from loadtest.results import summary

RTT = {"mean": 2.0, "p50": 1.5, "p95": 3.0, "p99": 4.25, "max": 9.0}


def rooms_line(rooms, rooms_per_viewer=1, **figures):
    """A ``rooms`` line as a results file holds it, older (fields missing read as None)."""
    line = dict(type="rooms", server="broker-pypy", transport="websocket", rooms=rooms, viewers=5000,
                rooms_per_viewer=rooms_per_viewer, skew="uniform", room_rate=1.0, deliveries_per_s=5000.0,
                rtt_ms=RTT, hot_rtt_ms=RTT, tail_rtt_ms=dict(RTT, p99=None), cpu_us_per_delivery=7.125,
                rss_per_idle_room_kb=4.8, rss_per_joined_room_kb=31.0, connections=5000, foreign=0, short=0,
                dropped=0)
    line.update(figures)
    return records.parse_older(line)


def test_each_load_s_runs_go_by_number_of_rooms_whatever_order_they_ran_in():
    results = summary.Results([rooms_line(1000), rooms_line(1), rooms_line(10, rooms_per_viewer=5)])
    series = summary.rooms_series(results)
    assert list(series) == ["broker-pypy over websocket, 5,000 viewers x 1 room, uniform, 1 msgs/s a room",
                            "broker-pypy over websocket, 5,000 viewers x 5 rooms, uniform, 1 msgs/s a room"]
    assert [run.rooms for run in series[next(iter(series))]] == [1, 1000]


def test_a_row_per_run_with_its_costs_and_what_went_wrong():
    table = summary.summary_rst(summary.Results([rooms_line(100, foreign=2)]))
    assert table.startswith("Rooms: viewers spread over rooms")
    (row,) = [line.split() for line in table.splitlines() if line.startswith("broker-pypy")]
    assert row == ["broker-pypy", "websocket", "100", "5000", "1", "uniform", "5,000", "1.5", "4.2", "4.2", "-",
                   "7.12", "4.80", "31.00", "5000", "2", "0", "0"]
