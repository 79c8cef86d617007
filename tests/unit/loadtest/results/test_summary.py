"""The summary table, which needs no matplotlib."""

from loadtest.method.rules import End
from loadtest import records as schema
from loadtest.results import summary


def results_of(lines):
    """The :class:`~loadtest.results.summary.Results` of results lines as a file holds them."""
    return summary.Results([schema.parse_older(line) for line in lines])

CPU_PER_MSG = {"type": "cpu_per_msg", "server": "sockjs-node", "level": 8, "rate": 10.0, "cpu_us_per_msg": 12.5,
               "rtt_ms": {"p50": 1.0, "p99": 2.0}, "lost": 0}


def test_a_floor_that_sent_nothing_is_left_out_of_the_costs():
    records = [{"type": "run"}, {"type": "server", "server": "sockjs-node", "runtime": "Node 20.20.2"},
               CPU_PER_MSG, {"type": "floor", "sends": 0, "cpu_us_per_send": None}]
    table = summary.summary_rst(results_of(records))
    assert "Cost per delivered message at 8 clients x 10 msgs/s\n" in table
    assert "sockjs-node  Node 20.20.2  12.50" in table


def test_the_one_transport_measured_is_named_in_the_titles_older_files_sockjs_as_websocket():
    step = {"type": "step", "server": "sockjs-node", "level": 8, "server_msgs_per_s": 80, "rate": 10,
            "rtt_ms": {"mean": 1.0}, "overloaded": False, "client_bound": False, "server_cpu": 0.1}
    for transport, named in (("mix:websocket=70,xhr-polling=30", "mix:websocket=70,xhr-polling=30"),
                             ("sockjs", "websocket")):
        table = summary.summary_rst(results_of([{"type": "run", "transport": transport}, step, CPU_PER_MSG]))
        assert "Highest server messages/s over %s with mean round trip <= 200 ms\n" % named in table
        assert "Cost per delivered message over %s at 8 clients x 10 msgs/s\n" % named in table


def test_the_floor_is_in_the_title_and_the_ratios():
    records = [{"type": "run"}, CPU_PER_MSG, {"type": "floor", "sends": 100, "cpu_us_per_send": 2.5}]
    table = summary.summary_rst(results_of(records))
    assert "floor (bare send loop): 2.50 us per send" in table
    assert "5.00x" in table


def test_each_fixed_load_gets_its_own_cost_table_the_floor_only_the_first():
    second = dict(CPU_PER_MSG, level=19000, rate=5.0, cpu_us_per_msg=9.0, rtt_ms={"p50": 1.5, "p99": 3.0})
    records = [{"type": "run"}, CPU_PER_MSG, second, {"type": "floor", "sends": 100, "cpu_us_per_send": 2.5}]
    table = summary.summary_rst(results_of(records))
    assert "Cost per delivered message at 8 clients x 10 msgs/s; floor (bare send loop): 2.50 us per send\n" in table
    assert "Cost per delivered message at 19000 clients x 5 msgs/s\n" in table
    assert table.index("12.50") < table.index("9.00")
    assert "3.6x" not in table and table.count("5.00x") == 1


def test_a_soak_gets_a_row_per_server_with_its_growth_and_verdict(soak_records):
    table = summary.summary_rst(results_of(soak_records))
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
    table = summary.summary_rst(results_of(soak_records))
    assert "Churn: 5 waves of 100 sessions per transport" in table
    (row,) = [line for line in table.split("Churn:")[1].splitlines() if line.startswith("broker-cpython")]
    assert row.split() == ["broker-cpython", "0", "0", "6.2", "41.0", "42.0", "flat"]


def test_rss_series_is_minutes_and_mb_per_server_in_the_order_measured(soak_records):
    series = summary.rss_series(results_of(soak_records))
    assert list(series) == ["broker-cpython", "broker-pypy"]
    assert series["broker-pypy"][0] == (0.5, 110.0)
    assert series["broker-pypy"][-1] == (10.0, 300.0)
    assert len(series["broker-cpython"]) == 20


def test_results_without_a_soak_have_no_soak_section():
    table = summary.summary_rst(results_of([{"type": "run"}, CPU_PER_MSG]))
    assert "held load" not in table and "Churn" not in table


def level_steps(server, level, *steps):
    """Step records of one level: ``(msgs/s, rate, mean ms, overloaded, client_bound, server_cpu)`` each."""
    return [{"type": "step", "server": server, "level": level, "server_msgs_per_s": msgs, "rate": rate,
             "rtt_ms": {"mean": mean}, "overloaded": overloaded, "client_bound": client_bound,
             "server_cpu": server_cpu} for msgs, rate, mean, overloaded, client_bound, server_cpu in steps]


def test_realtime_capacity_names_what_stopped_each_level():
    records = (
        level_steps("knee", 100, (1000, 10, 1.0, False, False, 0.1), (2000, 20, 350.0, False, True, 0.95),
                    (2500, 28, 2000.0, True, True, 0.99))
        + level_steps("client", 100, (1000, 10, 1.0, False, True, 0.3), (1900, 20, 9.0, False, True, 0.5),
                      (2000, 28, 1600.0, True, True, 0.6))
        + level_steps("sockjs-node", 100, (1000, 10, 1.0, False, False, 0.2), (1500, 14, 80.0, False, False, 0.9),
                      (1600, 20, 900.0, False, False, 0.99))
        + level_steps("capped", 100, (1000, 10, 1.0, False, False, 0.2))
        + level_steps("relapsed", 100, (1000, 10, 1.0, False, False, 0.3), (1800, 20, 300.0, False, False, 0.9),
                      (2700, 28, 150.0, False, False, 0.95), (2800, 40, 900.0, True, False, 0.99))
        + [{"type": "level", "server": "client", "level": 100, "end": "client-bound: at 28 msgs/s"},
           {"type": "level", "server": "capped", "level": 100, "end": "the sweep's cap reached: 10 msgs/s"}]
    )
    rows = {row.server: row for row in summary.realtime_capacity(results_of(records))}
    assert (rows["knee"].msgs_per_s, rows["knee"].rate, rows["knee"].limit) == (1000, 10, summary.SERVER)
    assert (rows["client"].msgs_per_s, rows["client"].rate, rows["client"].limit) == (1900, 20, summary.CLIENT)
    assert rows["sockjs-node"].limit == summary.SERVER  # past realtime, not yet overloaded
    assert rows["capped"].limit is End.CAP_REACHED
    # Back within realtime after a step past it: not a rate it keeps.
    assert (rows["relapsed"].msgs_per_s, rows["relapsed"].rate, rows["relapsed"].limit) == (1000, 10, summary.SERVER)
    assert rows["knee"].ratio == 1000 / 1500  # two limits: a ratio
    assert rows["client"].ratio is None and rows["capped"].ratio is None  # a lower bound against a limit: none
    table = summary.summary_rst(results_of(records))
    cells = {line.split()[0]: line.split() for line in table.splitlines() if line.split()[:1] and
             line.split()[0] in rows}
    assert cells["knee"] == ["knee", "100", "1,000", "10", "0.67x", "server"]
    assert cells["client"] == ["client", "100", "1,900+", "20", "-", "client-bound"]
    assert cells["capped"][2] == "1,000+" and cells["capped"][-3:] == ["sweep's", "cap", "reached"]
    assert "``+``: not stopped by the server" in table


def test_old_results_whose_sweep_stopped_at_its_top_rate_keep_their_plus():
    records = level_steps("broker", 25, (19961, 800, 0.5, False, False, 0.1)) + [
        {"type": "level", "server": "broker", "level": 25, "end": "sweep done"}]
    (row,) = summary.realtime_capacity(results_of(records))
    assert row.limit is End.SWEEP_DONE
    assert "19,961+" in summary.summary_rst(results_of(records))


def test_several_transports_get_a_column_and_ratios_over_the_same_transport(by_transport_records):
    results = results_of(by_transport_records)
    assert results.transports == ["websocket", "xhr-polling"]
    table = summary.summary_rst(results)
    assert "ratios to sockjs-node over the same transport" in table
    header = [line for line in table.splitlines() if line.startswith("transport")][0]
    assert header.split()[:3] == ["transport", "server", "runtime"]
    rows = [line.split() for line in table.splitlines() if line.split()[:1] in (["websocket"], ["xhr-polling"])]
    assert [row[:2] for row in rows] == [["websocket", "broker-cpython"], ["websocket", "sockjs-node"],
                                         ["xhr-polling", "broker-cpython"], ["xhr-polling", "sockjs-node"]]
    assert rows[0][4:7] == ["4.00", "0.50x", "2.00x"]  # CPU, vs sockjs-node over websocket, vs floor
    assert rows[2][4:7] == ["30.00", "1.50x", "15.00x"]
    assert rows[2][-2:] == ["15.0", "0.50x"]  # idle KiB per connection, vs sockjs-node over xhr-polling


def test_one_transport_keeps_the_table_without_a_transport_column(by_transport_records):
    websocket = [line for line in by_transport_records if line.get("transport") in (None, "websocket")]
    table = summary.summary_rst(results_of(websocket))
    assert "transport" not in table
    assert [line.split()[:4] for line in table.splitlines() if line.startswith("sockjs-node")] == [
        ["sockjs-node", "Node", "20.20.2", "8.00"]]


def test_older_fixed_loads_and_idle_connections_measured_the_run_s_transport():
    records = [{"type": "run", "transport": "sockjs"}, CPU_PER_MSG,
               {"type": "idle_rss", "server": "sockjs-node", "rss_per_conn_kb": 5.0}]
    results = results_of(records)
    # ``sockjs``: what older files call the websocket.
    assert [r.transport for r in results.cpu_per_msg + results.idle_rss] == ["websocket", "websocket"]
    assert results.transports == ["websocket"]
    (row,) = summary.cost_rows(results)
    assert (row["transport"], row["cpu_us_per_msg"], row["rss_per_conn_kb"]) == ("websocket", 12.5, 5.0)


def test_a_broker_over_tls_beside_itself_plain_gets_its_price_in_vs_plain_columns():
    records = [{"type": "run", "transport": "websocket"}]
    for server, tls, us, kb in (("broker-pypy", False, 4.0, 10.0), ("broker-pypy+tls", True, 6.0, 40.0),
                                ("sockjs-node", False, 8.0, 20.0)):
        records += [{"type": "server", "server": server, "runtime": "PyPy 7.3.11", "tls": tls},
                    dict(CPU_PER_MSG, server=server, transport="websocket", cpu_us_per_msg=us, tls=tls),
                    {"type": "idle_rss", "server": server, "transport": "websocket", "rss_per_conn_kb": kb, "tls": tls}]
    table = summary.summary_rst(results_of(records))
    assert "vs plain: a server over TLS (+tls) against itself plain" in table
    header = [line.split() for line in table.splitlines() if line.startswith("server")][0]
    assert header[header.index("us/msg") + 1:header.index("us/msg") + 6] == ["vs", "sockjs-node", "vs", "plain", "vs"]
    rows = {line.split()[0]: line.split() for line in table.splitlines() if line.startswith(("broker", "sockjs"))}
    assert rows["broker-pypy+tls"][3:6] == ["6.00", "0.75x", "1.50x"]  # CPU, vs sockjs-node, vs plain
    assert rows["broker-pypy+tls"][-3:] == ["40.0", "2.00x", "4.00x"]  # idle KiB, vs sockjs-node, vs plain
    assert rows["broker-pypy"][5] == "-" and rows["broker-pypy"][-1] == "-"


def test_a_run_over_tls_alone_has_no_vs_plain_column():
    records = [{"type": "run"}, dict(CPU_PER_MSG, server="broker-cpython+tls", tls=True)]
    assert "vs plain" not in summary.summary_rst(results_of(records))


ROLLING = {"type": "rolling", "server": "cluster-cpython", "drain_s": 10.0, "clients": 15000, "published": 120,
           "lost": 0, "duplicated": 5, "resent": 3, "gaps": {}, "peak_new_sessions": 560, "peak_broker": 2,
           "new_sessions_bound": 750.0, "steady_p99_ms": 40.0, "restart_p99_ms": 61.5, "p99_bound_ms": 80.0,
           "failures": []}


def test_each_rolling_restart_is_a_row_beside_its_bounds_and_verdict():
    # A line older than "resent" counted the resent among the twice.
    without = dict({name: value for name, value in ROLLING.items() if name != "resent"}, drain_s=0.0,
                   peak_new_sessions=4900, peak_broker=1, new_sessions_bound=None, p99_bound_ms=None,
                   gaps={"expired": 2}, failures=["2 gaps"])
    table = summary.summary_rst(results_of([{"type": "run"}, ROLLING, without]))
    assert "Rolling restarts: every broker of a cluster restarted in turn, with a drain and without" in table
    rows = [line.split("  ") for line in table.splitlines() if line.startswith("cluster-cpython")]
    assert [[cell.strip() for cell in row if cell.strip()] for row in rows] == [
        ["cluster-cpython", "10", "15,000", "120", "0", "2", "3", "0", "560 at broker 2", "750", "40.0", "61.5", "-",
         "80.0", "passed"],
        ["cluster-cpython", "0", "15,000", "120", "0", "5", "-", "2", "4900 at broker 1", "-", "40.0", "61.5", "-",
         "-", "2 gaps"]]


def test_a_crash_says_how_its_brokers_were_stopped_in_place_of_a_drain():
    crash = dict(ROLLING, drain_s=0.0, signal="KILL", new_sessions_bound=None, uncut_p99_ms=52.5)
    table = summary.summary_rst(results_of([{"type": "run"}, crash]))
    (row,) = [line.split() for line in table.splitlines() if line.startswith("cluster-cpython")]
    assert row[1] == "SIGKILL", row
    assert row[-4:] == ["61.5", "52.5", "80.0", "passed"], row


def test_a_rolling_restarts_records_are_gathered_run_by_run():
    second = {"type": "rolling_second", "server": "cluster-cpython", "drain_s": 10.0, "connections": [1, 1],
              "new_sessions": [0, 0], "delivered": 2, "delivery_ms": {}}
    restart = {"type": "broker_restart", "server": "cluster-cpython", "drain_s": 10.0, "broker": 1}
    lines = [dict(second, second=1), dict(second, second=0), restart, ROLLING, dict(second, drain_s=0.0, second=0)]
    runs = summary.rolling_runs(results_of(lines))
    assert [(run.drain_s, [s.second for s in run.seconds], len(run.restarts), run.summary is not None)
            for run in runs] == [(10.0, [0, 1], 1, True), (0.0, [0], 0, False)]


def test_a_cell_holding_a_line_break_stays_on_its_row():
    table = summary.rst_table(["server", "verdict"], [["a", 'answered 503: {"error": "lost"}\n; 2 over']])
    assert table.splitlines()[3] == 'a       answered 503: {"error": "lost"} ; 2 over'


def swept(transport, server, *steps):
    """:func:`level_steps` of 1,000 clients over ``transport``."""
    return [dict(step, transport=transport) for step in level_steps(server, 1000, *steps)]


def test_the_knee_of_each_transport_is_a_row_beside_sockjs_node_s_over_the_same_transport(by_transport_records):
    records = (by_transport_records[:1]
               + swept("websocket", "broker-cpython", (40000, 40, 2.0, False, False, 0.5),
                       (60000, 60, 900.0, False, False, 0.99))
               + swept("xhr-polling", "broker-cpython", (10000, 10, 2.0, False, False, 0.4),
                       (20000, 20, 900.0, False, False, 0.99))
               + swept("websocket", "sockjs-node", (20000, 20, 2.0, False, False, 0.99),
                       (30000, 30, 700.0, False, False, 0.99))
               + swept("xhr-polling", "sockjs-node", (20000, 20, 3.0, False, True, 0.5))
               + [{"type": "level", "server": "sockjs-node", "transport": "xhr-polling", "level": 1000,
                   "end": "client-bound: at 20 msgs/s"}]
               + by_transport_records[1:])
    results = results_of(records)
    knees = {(row.transport, row.server): row for row in summary.realtime_capacity(results)}
    assert {key: (row.msgs_per_s, row.ratio) for key, row in knees.items()} == {
        ("websocket", "broker-cpython"): (40000, 2.0), ("xhr-polling", "broker-cpython"): (10000, None),
        ("websocket", "sockjs-node"): (20000, 1.0), ("xhr-polling", "sockjs-node"): (20000, None)}
    assert knees[("xhr-polling", "sockjs-node")].limit is End.CLIENT_BOUND
    table = summary.summary_rst(results)
    knee_table = table.split("Cost per delivered message")[0]
    assert "ratios to sockjs-node over the same transport" in knee_table
    rows = [line.split() for line in knee_table.splitlines() if line.split()[:1] in (["websocket"], ["xhr-polling"])]
    assert [row[:5] for row in rows] == [
        ["websocket", "broker-cpython", "1000", "40,000", "40"], ["websocket", "sockjs-node", "1000", "20,000", "20"],
        ["xhr-polling", "broker-cpython", "1000", "10,000", "10"], ["xhr-polling", "sockjs-node", "1000", "20,000+", "20"]]


def test_steps_and_levels_of_an_older_file_swept_the_run_s_transport():
    records = [{"type": "run", "transport": "sockjs"}] + level_steps("broker", 25, (500, 20, 1.0, False, False, 0.1)) + [
        {"type": "level", "server": "broker", "level": 25, "end": "sweep done"}]
    results = results_of(records)
    assert results.transports == ["websocket"]
    (row,) = summary.realtime_capacity(results)
    assert (row.transport, row.limit) == ("websocket", End.SWEEP_DONE)
    assert "\ntransport " not in summary.summary_rst(results)  # no column for the one transport
