"""The rolling restart's figure and table, from a results file written by hand."""

import json
import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from loadtest import records  # noqa: E402
from loadtest.results import files, summary  # noqa: E402
from plots import __main__ as cli  # noqa: E402
from plots import figures  # noqa: E402

SERVER = "cluster-cpython"


def run_lines(drain_s, held, new, p99_ms, failures=()):
    """The lines of one rolling restart of 3 brokers: a second per item of ``held`` (sessions at each
    broker) and ``new`` (new sessions at each), every second's p99 ``p99_ms``, broker 1 restarted at 1 s."""
    lines = [records.RollingSecond(server=SERVER, drain_s=drain_s, second=second, connections=list(held[second]),
                                   new_sessions=list(new[second]), delivered=30,
                                   delivery_ms={"p50": 2.0, "p99": p99_ms[second], "max": 40.0})
             for second in range(len(held))]
    lines.append(records.BrokerRestart(server=SERVER, drain_s=drain_s, broker=1, sigterm_s=1.0, exited_s=1.0 + drain_s,
                                       exit_code=0, listening_s=1.5 + drain_s, healthy_s=1.6 + drain_s))
    lines.append(records.Rolling(
        server=SERVER, drain_s=drain_s, backoff_s=1.0, brokers=3, transport="websocket", clients=30, connected=30,
        rate=1.0, published=4, complete=30, lost=0, duplicated=0, resent=0, gaps={}, never_back=0,
        reconnect_failures={}, ends={"3012": 10}, restart_s=[1, 3], peak_new_sessions=max(map(max, new)),
        peak_second=2, peak_broker=2,
        new_sessions_bound=7.5 if drain_s else None, steady_p99_ms=p99_ms[0],
        restart_p99_ms=max(p99_ms[1:]), worst_second_p99_ms=max(p99_ms[1:]),
        p99_bound_ms=2 * p99_ms[0] if drain_s else None, failures=list(failures), end="completed"))
    return lines


@pytest.fixture
def results_path(tmp_path):
    held = [(10, 10, 10), (5, 13, 12), (0, 15, 15), (0, 15, 15)]
    drained = run_lines(2.0, held, [(0, 0, 0), (0, 3, 2), (0, 2, 3), (0, 0, 0)], [5.0, 8.0, 9.0, 5.0])
    at_once = run_lines(0.0, [(10, 10, 10), (0, 15, 15), (0, 15, 15), (0, 15, 15)],
                        [(0, 0, 0), (0, 15, 15), (0, 0, 0), (0, 0, 0)], [5.0, 600.0, 5.0, 5.0])
    path = tmp_path / "rolling.jsonl"
    with files.ResultsFile(str(path)) as out:
        out.write(files.run_record(None, "websocket"))
        for line in drained + at_once:
            out.write(line)
    return path


def test_the_command_draws_the_rolling_restart_and_tables_each_run(results_path, tmp_path, capsys):
    assert cli.main([str(results_path), "-o", str(tmp_path / "figures")]) == 0
    assert sorted(os.listdir(str(tmp_path / "figures"))) == ["rolling_restart.png", "rolling_restart.svg",
                                                             "summary.rst"]
    table = capsys.readouterr().out
    assert "Rolling restarts" in table and "restart p99 ms" in table
    assert [line.split()[:2] for line in table.splitlines() if line.startswith(SERVER)] == [
        [SERVER, "2"], [SERVER, "0"]]


def test_each_run_is_a_column_of_sessions_new_sessions_and_lateness_with_its_restarts_shaded(results_path):
    results = summary.Results(files.read(str(results_path)))
    figure = figures.rolling_figure(results)
    axes = [a for a in figure.axes if a.get_visible()]
    assert len(axes) == 6
    held, new, late = axes[0], axes[2], axes[4]  # the first column: matplotlib orders a grid by rows
    assert "drain 2 s" in held.get_title() and "passed" in held.get_title()
    assert "no drain" in axes[1].get_title()
    lines = {line.get_label(): line for line in held.get_lines()}
    assert list(lines["broker 1"].get_xdata()) == [1, 2, 3, 4] and list(lines["broker 1"].get_ydata()) == [10, 5, 0, 0]
    assert list(lines["broker 3"].get_ydata()) == [10, 12, 15, 15]
    steps = {line.get_label(): line for line in new.get_lines()}
    assert list(steps["broker 2"].get_ydata()) == [0, 3, 2, 0, 0]
    assert list(steps["bound: 1.5 x clients per broker / drain"].get_ydata()) == [7.5, 7.5]
    lateness = {line.get_label(): line for line in late.get_lines()}
    assert list(lateness["p99"].get_ydata()) == [5.0, 8.0, 9.0, 5.0, 5.0]
    assert list(lateness["bound: 2 x steady p99"].get_ydata()) == [10.0, 10.0] and late.get_yscale() == "log"
    # broker 1 drained from 1 s to 3 s, then down until 3.6 s: two spans in every panel of its column
    spans = [patch.get_x() for patch in held.patches]
    assert spans == [1.0, 3.0]
    assert "bound: 2 x steady p99" not in {line.get_label() for line in axes[5].get_lines()}
    # a row shares its scale: the run without a drain sets the height of the new sessions'
    assert new.get_ylim() == axes[3].get_ylim() and new.get_ylim()[1] >= 15


def test_a_second_server_adds_its_rows(results_path, tmp_path):
    lines = [json.loads(line) for line in results_path.read_text().splitlines()]
    for line in lines[1:]:
        line["server"] = "cluster-pypy"
    with open(str(results_path), "a") as out:
        out.write("".join(json.dumps(line) + "\n" for line in lines[1:]))
    figure = figures.rolling_figure(summary.Results(files.read(str(results_path))))
    assert len([a for a in figure.axes if a.get_visible()]) == 12
