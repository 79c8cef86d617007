"""The summary table, which needs no matplotlib."""

from loadtest import summary

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


def test_each_fixed_load_gets_its_own_cost_table_the_floor_only_the_first():
    second = dict(CPU_PER_MSG, level=19000, rate=5.0, cpu_us_per_msg=9.0, rtt_ms={"p50": 1.5, "p99": 3.0})
    records = [{"type": "run"}, CPU_PER_MSG, second, {"type": "floor", "sends": 100, "cpu_us_per_send": 2.5}]
    table = summary.summary_rst(summary.Results(records))
    assert "Cost per delivered message at 8 clients x 10 msgs/s; floor (bare send loop): 2.50 us per send\n" in table
    assert "Cost per delivered message at 19000 clients x 5 msgs/s\n" in table
    assert table.index("12.50") < table.index("9.00")
    assert "3.6x" not in table and table.count("5.00x") == 1


def test_a_soak_gets_a_row_per_server_with_its_growth_and_verdict(soak_records):
    table = summary.summary_rst(summary.Results(soak_records))
    lines = table.splitlines()
    assert lines[0] == ('Memory under a held load of 100 clients x 300 msgs/s; "flat": at most 10 % or 20 MB '
                        'above the RSS after the 60 s warm-up')
    header = lines[3].split("  ")
    assert [cell.strip() for cell in header if cell.strip()] == [
        "server", "runtime", "minutes", "RSS after warm-up MB", "final RSS MB", "growth MB/h", "growth %",
        "lost", "dropped", "verdict"]
    cpython, pypy = [line for line in lines[:8] if line.startswith("broker-")]
    assert cpython.split() == ["broker-cpython", "CPython", "3.11.7", "10.0", "41.0", "41.0", "+0.0", "+0.0",
                               "0", "0", "flat"]
    assert pypy.split()[5:] == ["10.0", "120.0", "300.0", "+1080.0", "+150.0", "7", "0", "growing",
                                "(server", "gone:", "the", "server", "died)"]


def test_a_churn_gets_its_sessions_and_rss_before_and_after(soak_records):
    table = summary.summary_rst(summary.Results(soak_records))
    assert "Churn: 5 waves of 100 sessions per transport" in table
    (row,) = [line for line in table.split("Churn:")[1].splitlines() if line.startswith("broker-cpython")]
    assert row.split() == ["broker-cpython", "0", "0", "6.2", "41.0", "42.0", "flat"]


def test_rss_series_is_minutes_and_mb_per_server_in_the_order_measured(soak_records):
    series = summary.rss_series(summary.Results(soak_records))
    assert list(series) == ["broker-cpython", "broker-pypy"]
    assert series["broker-pypy"][0] == (0.5, 110.0)
    assert series["broker-pypy"][-1] == (10.0, 300.0)
    assert len(series["broker-cpython"]) == 20


def test_results_without_a_soak_have_no_soak_section():
    table = summary.summary_rst(summary.Results([{"type": "run"}, CPU_PER_MSG]))
    assert "held load" not in table and "Churn" not in table
