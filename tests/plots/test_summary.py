"""The summary table, which needs no matplotlib."""

from plots import summary

CPU_PER_MSG = {"type": "cpu_per_msg", "server": "sockjs-node", "level": 8, "rate": 10.0, "cpu_us_per_msg": 12.5,
               "rtt_ms": {"p50": 1.0, "p99": 2.0}, "lost": 0}


def test_a_floor_that_sent_nothing_is_left_out_of_the_costs():
    records = [{"type": "run"}, {"type": "server", "server": "sockjs-node", "runtime": "Node 20.20.2"},
               CPU_PER_MSG, {"type": "floor", "sends": 0, "cpu_us_per_send": None}]
    table = summary.summary_rst(summary.Results(records))
    assert "Cost per delivered message at 8 clients x 10 msgs/s\n" in table
    assert "sockjs-node  Node 20.20.2  12.50" in table


def test_the_floor_is_in_the_title_and_the_ratios():
    records = [{"type": "run"}, CPU_PER_MSG, {"type": "floor", "sends": 100, "cpu_us_per_send": 2.5}]
    table = summary.summary_rst(summary.Results(records))
    assert "floor (bare send loop): 2.50 us per send" in table
    assert "5.00x" in table
