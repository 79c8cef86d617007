"""Figures and tables from the results of a real short ``compare`` run."""

import json
import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from plots import __main__ as cli  # noqa: E402
from loadtest import summary  # noqa: E402
from plots import figures  # noqa: E402

SERVERS = ["sockjs-tornado", "sockjs-node"]


@pytest.fixture
def compared(compare_results):
    return summary.Results(compare_results[1])


def steps_of(results, server, level):
    return [s for s in results.steps if s["server"] == server and s["level"] == level]


def test_command_writes_every_figure_and_the_table(compare_results, tmp_path, capsys):
    path, _ = compare_results
    assert cli.main([str(path), "-o", str(tmp_path / "figures")]) == 0
    names = sorted(os.listdir(str(tmp_path / "figures")))
    compared = [name for name, _ in figures.FIGURES if name != "rss_over_time"]  # a compare run has no soak
    expected = sorted("%s.%s" % (name, ext) for name in compared for ext in ("png", "svg"))
    assert names == sorted(expected + ["summary.rst"])
    with open(str(tmp_path / "figures" / "rtt_mean.png"), "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
    table = (tmp_path / "figures" / "summary.rst").read_text()
    assert table in capsys.readouterr().out
    assert "sockjs-tornado  3" in table


@pytest.mark.parametrize("statistic", ["mean", "p99"])
def test_latency_figure_has_one_line_per_server_and_level(compared, statistic):
    axes = figures.latency_figure(compared, statistic).axes[0]
    lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
    assert sorted(lines) == sorted("%s, %d clients" % (s, n) for s in SERVERS for n in (3, 6))
    for server in SERVERS:
        for level in (3, 6):
            steps = [s for s in steps_of(compared, server, level) if s["rtt_ms"][statistic] is not None]
            line = lines["%s, %d clients" % (server, level)]
            assert list(line.get_xdata()) == [s["server_msgs_per_s"] for s in steps]
            assert list(line.get_ydata()) == [s["rtt_ms"][statistic] for s in steps]
    realtime = [line for line in axes.get_lines() if line.get_label() == "_realtime"]
    assert list(realtime[0].get_ydata()) == [summary.REALTIME_MS] * 2
    assert axes.get_xscale() == "log"
    assert "ms" in axes.get_ylabel() and "messages/s" in axes.get_xlabel()


def test_cpu_figure_has_a_bar_per_server_and_the_floor(compared):
    axes = figures.cpu_figure(compared).axes[0]
    heights = [bar.get_height() for bar in axes.patches]
    assert heights == [r["cpu_us_per_msg"] for r in compared.cpu_per_msg]
    assert [t.get_text() for t in axes.get_xticklabels()] == SERVERS
    floor = [line for line in axes.get_lines() if line.get_label().startswith("floor")]
    assert list(floor[0].get_ydata()) == [compared.floor["cpu_us_per_send"]] * 2


def test_rss_figure_has_a_bar_per_server(compared):
    axes = figures.rss_figure(compared).axes[0]
    assert [bar.get_height() for bar in axes.patches] == [r["rss_per_conn_kb"] for r in compared.idle_rss]
    assert "KiB" in axes.get_ylabel()


def test_subtitle_names_machine_runtimes_and_date(compared):
    text = summary.subtitle(compared)
    assert compared.run["started"][:10] in text
    assert "Node " in text and "CPython " in text
    assert "%d cores" % compared.run["machine"]["cores"] in text


def test_realtime_capacity_is_the_best_healthy_step_against_sockjs_node(compared):
    rows = {(row.server, row.level): row for row in summary.realtime_capacity(compared)}
    assert sorted(rows) == sorted((s, n) for s in SERVERS for n in (3, 6))
    for (server, level), row in rows.items():
        healthy = [s["server_msgs_per_s"] for s in steps_of(compared, server, level)
                   if not s["overloaded"] and s["rtt_ms"]["mean"] <= summary.REALTIME_MS]
        assert row.msgs_per_s == max(healthy)
        reference = rows[("sockjs-node", level)].msgs_per_s
        assert row.ratio == pytest.approx(row.msgs_per_s / reference)


def test_realtime_capacity_ignores_slow_and_overloaded_steps():
    step = {"type": "step", "server": "s", "level": 10, "rate": 10, "overloaded": False}
    records = [
        dict(step, server_msgs_per_s=100.0, rtt_ms={"mean": 5.0}),
        dict(step, server_msgs_per_s=300.0, rtt_ms={"mean": 250.0}),
        dict(step, server_msgs_per_s=400.0, rtt_ms={"mean": 20.0}, overloaded=True),
    ]
    (row,) = summary.realtime_capacity(summary.Results(records))
    assert (row.msgs_per_s, row.ratio, row.limit) == (100.0, None, summary.SERVER)


def test_figures_without_measurements_are_skipped(tmp_path):
    results = summary.Results([{"type": "run", "started": "2026-01-01T00:00:00+00:00"}])
    written, skipped = figures.write_all(results, str(tmp_path))
    assert written == [] and skipped == [name for name, _ in figures.FIGURES]


def test_rss_over_time_has_a_line_per_soaked_server_and_the_warm_up(soak_records):
    results = summary.Results(soak_records)
    axes = figures.rss_over_time_figure(results).axes[0]
    lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
    assert sorted(lines) == ["broker-cpython: flat", "broker-pypy: growing"]
    for server, line in (("broker-cpython", lines["broker-cpython: flat"]),
                         ("broker-pypy", lines["broker-pypy: growing"])):
        samples = [s for s in results.soak_samples if s["server"] == server]
        assert list(line.get_xdata()) == [s["elapsed_s"] / 60 for s in samples]
        assert list(line.get_ydata()) == [s["server_rss_kb"] / 1024 for s in samples]
    (warmup,) = [line for line in axes.get_lines() if line.get_label() == "_warmup"]
    assert list(warmup.get_xdata()) == [1.0, 1.0]
    assert axes.get_ylim()[0] == 0
    assert "MB" in axes.get_ylabel() and "minutes" in axes.get_xlabel()
    assert "100 clients x 300 msgs/s" in axes.get_xlabel()


def test_command_draws_the_soak_figure_and_table(soak_records, tmp_path, capsys):
    path = tmp_path / "soak.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in soak_records))
    assert cli.main([str(path)]) == 0
    written = sorted(os.listdir(str(tmp_path / "soak")))
    assert written == ["rss_over_time.png", "rss_over_time.svg", "summary.rst"]
    out, err = capsys.readouterr()
    assert "held load" in out and "no rtt_mean figure" in err
