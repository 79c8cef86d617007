"""Figures and tables from the results of a real short ``compare`` run."""

import json
import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402
from matplotlib.text import Text  # noqa: E402

from loadtest import records as schema  # noqa: E402
from loadtest.results import summary  # noqa: E402
from plots import __main__ as cli  # noqa: E402
from plots import figures  # noqa: E402
import result_lines  # noqa: E402


def results_of(lines):
    """The :class:`~loadtest.results.summary.Results` of results lines as a file holds them."""
    return summary.Results([schema.parse_older(line) for line in lines])

SERVERS = ["sockjs-tornado", "sockjs-node"]


@pytest.fixture
def compared(compare_results):
    return results_of(compare_results[1])


def steps_of(results, server, level):
    return [s for s in results.steps if s.server == server and s.level == level]


def test_command_writes_every_figure_and_the_table(compare_results, tmp_path, capsys):
    path, _ = compare_results
    assert cli.main([str(path), "-o", str(tmp_path / "figures")]) == 0
    names = sorted(os.listdir(str(tmp_path / "figures")))
    # a compare run has no soak, no rolling restart and no rooms; over one transport, no figure by transport
    compared = [name for name, _ in figures.FIGURES
                if name not in ("rss_over_time", "by_transport", "rolling_restart", "rooms")]
    expected = sorted("%s.%s" % (name, ext) for name in compared for ext in ("png", "svg"))
    assert names == sorted(expected + ["summary.rst"])
    with open(str(tmp_path / "figures" / "rtt_mean.png"), "rb") as png:
        assert png.read(8) == b"\x89PNG\r\n\x1a\n"
    table = (tmp_path / "figures" / "summary.rst").read_text()
    assert table in capsys.readouterr().out
    assert "sockjs-tornado  3" in table


@pytest.mark.parametrize("statistic", ["mean", "p99"])
def test_latency_figure_has_a_panel_per_server_and_a_line_per_level(compared, statistic):
    figure = figures.latency_figure(compared, statistic)
    assert [axes.get_title().split()[0] for axes in figure.axes] == SERVERS
    for axes, server in zip(figure.axes, SERVERS):
        lines = {line.get_label(): line for line in axes.get_lines() if line.get_label().endswith(" clients")}
        assert sorted(lines) == ["3 clients", "6 clients"]
        for level in (3, 6):
            steps = [s for s in steps_of(compared, server, level) if s.rtt_ms[statistic] is not None]
            assert list(lines["%d clients" % level].get_xdata()) == [s.server_msgs_per_s for s in steps]
            assert list(lines["%d clients" % level].get_ydata()) == [s.rtt_ms[statistic] for s in steps]
        realtime = [line for line in axes.get_lines() if line.get_label() == "_realtime"]
        assert list(realtime[0].get_ydata()) == [summary.REALTIME_MS] * 2
        assert axes.get_xscale() == "log"
    said = [text.get_text() for text in figure.findobj(Text)]  # the axis labels are the figure's, shared
    assert any("round trip (ms" in text for text in said) and any("server messages/s" in text for text in said)


def test_cpu_figure_has_a_bar_per_server_and_the_floor(compared):
    axes = figures.cpu_figure(compared).axes[0]
    heights = [bar.get_height() for bar in axes.patches]
    assert heights == [r.cpu_us_per_msg for r in compared.cpu_per_msg]
    assert [t.get_text() for t in axes.get_xticklabels()] == SERVERS
    floor = [line for line in axes.get_lines() if line.get_label().startswith("floor")]
    assert list(floor[0].get_ydata()) == [compared.floor.cpu_us_per_send] * 2


def test_rss_figure_has_a_bar_per_server(compared):
    axes = figures.rss_figure(compared).axes[0]
    assert [bar.get_height() for bar in axes.patches] == [r.rss_per_conn_kb for r in compared.idle_rss]
    assert "KiB" in axes.get_ylabel()


def test_subtitle_names_machine_runtimes_and_date(compared):
    text = summary.subtitle(compared)
    assert compared.run.started[:10] in text
    assert "Node " in text and "CPython " in text
    assert "%d cores" % compared.run.machine["cores"] in text


def test_realtime_capacity_is_the_best_healthy_step_against_sockjs_node(compared):
    rows = {(row.server, row.level): row for row in summary.realtime_capacity(compared)}
    assert sorted(rows) == sorted((s, n) for s in SERVERS for n in (3, 6))
    for (server, level), row in rows.items():
        healthy = [s.server_msgs_per_s for s in steps_of(compared, server, level)
                   if not s.overloaded and s.rtt_ms["mean"] <= summary.REALTIME_MS]
        assert row.msgs_per_s == max(healthy)
        reference = rows[("sockjs-node", level)]
        if row.limit == reference.limit == summary.SERVER:
            assert row.ratio == pytest.approx(row.msgs_per_s / reference.msgs_per_s)
        else:  # a lower bound is no ratio to a limit
            assert row.ratio is None


@pytest.fixture
def one_server_sweep(compare_results, tmp_path):
    """A results file of one server's latency sweep alone, as a plain ``python -m loadtest`` writes:
    the compare run's records of sockjs-node but its fixed loads and idle connections."""
    path = tmp_path / "sweep.jsonl"
    kept = [line for line in compare_results[1] if line["type"] == "run"
            or (line["type"] in ("server", "level", "step") and line["server"] == "sockjs-node")]
    path.write_text("".join(json.dumps(line) + "\n" for line in kept))
    return path


def test_a_sweep_alone_says_in_one_line_what_was_drawn_and_where(one_server_sweep, tmp_path, capsys):
    directory = str(tmp_path / "figures")
    assert cli.main([str(one_server_sweep), "-o", directory]) == 0
    assert sorted(os.listdir(directory)) == ["rtt_mean.png", "rtt_mean.svg", "rtt_p99.png", "rtt_p99.svg", "summary.rst"]
    assert capsys.readouterr().err.splitlines() == [
        "drew rtt_mean, rtt_p99 (PNG and SVG) and summary.rst in %s" % directory]


@pytest.mark.parametrize("statistic", ["mean", "p99"])
def test_the_latency_legend_is_clear_of_the_figures_title(compared, one_server_sweep, statistic):
    for results in (compared, results_of(result_lines.read(str(one_server_sweep)))):
        figure = figures.latency_figure(results, statistic)
        renderer = FigureCanvasAgg(figure).get_renderer()
        figure.draw(renderer)  # the constrained layout places the legend as a saved figure has it
        (title,) = [text for text in figure.findobj(Text) if text.get_text().startswith("Round trip")]
        (legend,) = figure.legends + [axes.get_legend() for axes in figure.axes if axes.get_legend() is not None]
        assert not legend.get_window_extent(renderer).overlaps(title.get_window_extent(renderer))
        assert legend.get_window_extent(renderer).x1 <= figure.bbox.x1  # and inside the figure
