"""Figures and tables from records written by hand."""

import json
import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from matplotlib.colors import to_rgba  # noqa: E402

from loadtest import records as schema  # noqa: E402
from loadtest.results import summary  # noqa: E402
from plots import __main__ as cli  # noqa: E402
from plots import canvas, figures  # noqa: E402


def results_of(lines):
    """The :class:`~loadtest.results.summary.Results` of results lines as a file holds them."""
    return summary.Results([schema.parse_older(line) for line in lines])


def test_realtime_capacity_ignores_slow_and_overloaded_steps():
    step = {"type": "step", "server": "s", "level": 10, "rate": 10, "overloaded": False}
    records = [
        dict(step, server_msgs_per_s=100.0, rtt_ms={"mean": 5.0}),
        dict(step, server_msgs_per_s=300.0, rtt_ms={"mean": 250.0}),
        dict(step, server_msgs_per_s=400.0, rtt_ms={"mean": 20.0}, overloaded=True),
    ]
    (row,) = summary.realtime_capacity(results_of(records))
    assert (row.msgs_per_s, row.ratio, row.limit) == (100.0, None, summary.SERVER)


def test_figures_without_measurements_are_skipped(tmp_path):
    results = results_of([{"type": "run", "started": "2026-01-01T00:00:00+00:00"}])
    written, skipped = figures.write_all(results, str(tmp_path))
    assert written == [] and skipped == [name for name, _ in figures.FIGURES]


def test_rss_over_time_has_a_line_per_soaked_server_and_the_warm_up(soak_records):
    results = results_of(soak_records)
    axes = figures.rss_over_time_figure(results).axes[0]
    lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
    assert sorted(lines) == ["broker-cpython: flat", "broker-pypy: growing"]
    for server, line in (("broker-cpython", lines["broker-cpython: flat"]),
                         ("broker-pypy", lines["broker-pypy: growing"])):
        samples = [s for s in results.soak_samples if s.server == server]
        assert list(line.get_xdata()) == [s.elapsed_s / 60 for s in samples]
        assert list(line.get_ydata()) == [s.server_rss_kb / 1024 for s in samples]
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
    assert "held load" in out
    assert err.splitlines() == ["drew rss_over_time (PNG and SVG) and summary.rst in %s" % (tmp_path / "soak")]


def bars_of(axes, labels=("websocket", "xhr-polling")):
    """``{(transport, server): height}`` of a by-transport panel whose groups are ``labels``."""
    heights = {}
    for container in axes.containers:
        for bar in container:
            transport = labels[int(round(bar.get_x() + bar.get_width() / 2))]
            heights[(transport, container.get_label())] = bar.get_height()
    return heights


def test_the_figure_by_transport_has_a_bar_per_server_in_each_transport_s_group(by_transport_records):
    def figures_of(kind, figure):
        return {(line["transport"], line["server"]): figure(line) for line in by_transport_records
                if line["type"] == kind}

    results = results_of(by_transport_records)
    figure = figures.by_transport_figure(results)
    cpu, p99, rss = figure.axes
    assert [tick.get_text() for tick in rss.get_xticklabels()] == ["websocket", "xhr-polling"]
    assert bars_of(cpu) == figures_of("cpu_per_msg", lambda line: line["cpu_us_per_msg"])
    assert bars_of(p99) == figures_of("cpu_per_msg", lambda line: line["rtt_ms"]["p99"])
    assert bars_of(rss) == figures_of("idle_rss", lambda line: line["rss_per_conn_kb"])
    assert len(bars_of(cpu)) == 4
    colors = canvas.server_colors(results.servers)
    for container in cpu.containers:
        assert {bar.get_facecolor() for bar in container} == {to_rgba(colors[container.get_label()])}
    assert "µs" in cpu.get_ylabel() and "ms" in p99.get_ylabel() and "KiB" in rss.get_ylabel()
    # Round trips span milliseconds to seconds: on a linear axis a second hides every millisecond.
    assert [axes.get_yscale() for axes in (cpu, p99, rss)] == ["linear", "log", "linear"]
    low, high = p99.get_ylim()
    assert low > 0 and low < min(bars_of(p99).values()) and high > max(bars_of(p99).values())
    assert "1,000 clients x 20 msgs/s" in rss.get_xlabel() and "100 idle connections" in rss.get_xlabel()


def test_without_idle_connections_by_transport_it_has_two_panels(by_transport_records):
    lines = [line for line in by_transport_records if line["type"] != "idle_rss"]
    assert len(figures.by_transport_figure(results_of(lines)).axes) == 2


def test_one_transport_draws_no_figure_by_transport_and_the_others_as_before(by_transport_records):
    websocket = [line for line in by_transport_records if line.get("transport") in (None, "websocket")]
    results = results_of(websocket)
    assert figures.by_transport_figure(results) is None
    axes = figures.cpu_figure(results).axes[0]
    assert [tick.get_text() for tick in axes.get_xticklabels()] == ["broker-cpython", "sockjs-node"]
    assert axes.get_xlabel() == "server, at 1,000 clients x 20 msgs/s sent = 20,000 deliveries/s"


def test_with_several_transports_the_figures_by_server_show_the_first(by_transport_records):
    results = results_of(by_transport_records)
    cpu = figures.cpu_figure(results).axes[0]
    assert [bar.get_height() for bar in cpu.containers[0]] == [4.0, 8.0]
    assert cpu.get_xlabel().endswith(" over websocket")
    rss = figures.rss_figure(results).axes[0]
    assert [bar.get_height() for bar in rss.containers[0]] == [10.0, 20.0]
    assert rss.get_xlabel() == "server, holding 100 idle connections over websocket"


def test_write_all_draws_the_figure_by_transport_when_there_are_several(by_transport_records, tmp_path):
    written, skipped = figures.write_all(results_of(by_transport_records), str(tmp_path))
    assert str(tmp_path / "by_transport.png") in written
    assert skipped == ["rtt_mean", "rtt_p99", "rss_over_time", "rolling_restart", "rooms"]


def sweep_records(by_transport_records):
    """``by_transport_records`` after a sweep of 1,000 clients over each transport: two steps per
    server, the second past realtime, except sockjs-node's polls, whose sweep ended at its top rate."""
    steps = []
    for transport, server, knee, last_mean in (
            ("websocket", "broker-cpython", 40000.0, 900.0), ("websocket", "sockjs-node", 20000.0, 900.0),
            ("xhr-polling", "broker-cpython", 10000.0, 900.0), ("xhr-polling", "sockjs-node", 20000.0, 9.0)):
        step = {"type": "step", "server": server, "transport": transport, "level": 1000, "overloaded": False,
                "client_bound": False, "server_cpu": 0.99}
        steps += [dict(step, rate=knee / 1000, server_msgs_per_s=knee, rtt_ms={"mean": 2.0, "p99": 4.0}),
                  dict(step, rate=knee / 500, server_msgs_per_s=knee * 1.5, rtt_ms={"mean": last_mean, "p99": 999.0})]
    steps.append({"type": "level", "server": "sockjs-node", "transport": "xhr-polling", "level": 1000,
                  "end": "sweep done"})
    return by_transport_records[:1] + steps + by_transport_records[1:]


def test_a_sweep_over_several_transports_puts_each_knee_above_the_costs(by_transport_records):
    results = results_of(sweep_records(by_transport_records))
    figure = figures.by_transport_figure(results)
    knee, cpu, p99, rss = figure.axes
    assert bars_of(knee) == {("websocket", "broker-cpython"): 40.0, ("websocket", "sockjs-node"): 20.0,
                             ("xhr-polling", "broker-cpython"): 10.0, ("xhr-polling", "sockjs-node"): 30.0}
    labels = sorted(text.get_text() for text in knee.texts if text.get_text())
    assert labels == ["10k", "20k", "40k", "≥30k"]  # ≥ : the sweep ended before the server did
    assert "deliveries/s" in knee.get_ylabel() and knee.get_yscale() == "linear"
    assert "higher is better" in figure.get_suptitle()
    assert "knee (mean round trip <= %.0f ms) at 1,000 clients" % summary.REALTIME_MS in rss.get_xlabel()
    assert "1,000 clients x 20 msgs/s" in rss.get_xlabel()


def test_a_sweep_alone_over_several_transports_draws_the_knees_alone(by_transport_records):
    lines = [line for line in sweep_records(by_transport_records) if line["type"] in ("run", "server", "step", "level")]
    (knee,) = figures.by_transport_figure(results_of(lines)).axes
    assert len(bars_of(knee)) == 4
    assert knee.get_xlabel().startswith("transport; knee") and "CPU" not in knee.get_xlabel()


def test_the_latency_figures_show_the_first_transport_swept(by_transport_records):
    results = results_of(sweep_records(by_transport_records))
    figure = figures.latency_figure(results)
    assert [axes.get_title() for axes in figure.axes] == ["broker-cpython (CPython 3.11.7)",
                                                         "sockjs-node (Node 20.20.2)"]
    for axes in figure.axes:
        (line,) = [line for line in axes.get_lines() if line.get_label() == "1000 clients"]
        assert len(line.get_xdata()) == 2  # the websocket steps; those over xhr-polling are not drawn
    assert figure.get_suptitle().endswith(" over websocket, by server")


def latency_records():
    """Three servers swept at 100 and 1,000 clients, each level two steps: at 1,000 clients the
    brokers' second step saturated the load client (the server's CPU at half a core), sockjs-node's
    overloaded the server (its CPU at 0.99), and broker-pypy's first step was both overloaded and
    client-bound with the server not saturated: the client's limit, not the server's."""
    marked = {("broker-cpython", 1): {"client_bound": True, "server_cpu": 0.5},
              ("broker-pypy", 0): {"overloaded": True, "client_bound": True, "server_cpu": 0.5},
              ("broker-pypy", 1): {"client_bound": True, "server_cpu": 0.5},
              ("sockjs-node", 0): {"overloaded": True, "client_bound": True, "server_cpu": 0.99}}
    lines = [{"type": "run", "started": "2026-11-25T15:00:00+00:00", "transport": "websocket"}]
    for server in ("broker-cpython", "broker-pypy", "sockjs-node"):
        for level in (100, 1000):
            for index, (rate, mean) in enumerate(((10, 2.0), (20, 300.0))):
                lines.append(dict({"type": "step", "server": server, "level": level, "rate": rate,
                                   "server_msgs_per_s": rate * level, "rtt_ms": {"mean": mean, "p99": mean * 3},
                                   "overloaded": False, "client_bound": False, "server_cpu": 0.4},
                                  **(marked.get((server, index), {}) if level == 1000 else {})))
    return lines


def marks(axes, label_part):
    """``[(x, y), ...]`` of the marks without a line whose label holds ``label_part``."""
    return [(x, y) for line in axes.get_lines() if label_part in line.get_label() and line.get_linestyle() == "None"
            for x, y in zip(line.get_xdata(), line.get_ydata())]


def test_the_latency_figure_has_a_panel_per_server_on_one_scale():
    figure = figures.latency_figure(results_of(latency_records()))
    assert [axes.get_title() for axes in figure.axes] == ["broker-cpython", "broker-pypy", "sockjs-node"]
    for axes in figure.axes:
        assert [line.get_label() for line in axes.get_lines() if line.get_label().endswith(" clients")] == [
            "100 clients", "1000 clients"]
        assert (axes.get_yscale(), axes.get_ylim(), axes.get_xlim()) == (
            "log", figure.axes[0].get_ylim(), figure.axes[0].get_xlim())
    # the third panel's cell below is empty: it shows the x axis's numbers itself
    assert figure.axes[1].xaxis.get_tick_params()["labelbottom"]


def test_a_step_the_load_client_limited_is_hollow_and_said_so_beside_the_server_s_overload():
    figure = figures.latency_figure(results_of(latency_records()))
    cpython, pypy, node = figure.axes
    assert marks(cpython, "load client") == [(20000, 300.0)]
    assert marks(pypy, "load client") == [(10000, 2.0), (20000, 300.0)]
    assert marks(node, "load client") == [] and marks(node, "overloaded") == [(10000, 2.0)]
    assert marks(pypy, "overloaded") == []  # overloaded, but by a saturated client: not the server's limit
    (hollow,) = [line for line in cpython.get_lines() if "load client" in line.get_label()]
    assert hollow.get_markerfacecolor() == "white"
    (line,) = [line for line in cpython.get_lines() if line.get_label() == "1000 clients"]
    assert line.get_markevery() == [0]  # the filled marks: the steps that measured the server
    (legend,) = [axes.get_legend() for axes in figure.axes if axes.get_legend() is not None]
    said = [text.get_text().replace("\n", " ") for text in legend.get_texts()]
    assert "load client saturated, not the server's limit" in said
    assert "server overloaded (its limit)" in said
    hollow_handle = legend.legend_handles[said.index("load client saturated, not the server's limit")]
    assert hollow_handle.get_markerfacecolor() == "white"


def test_a_knee_the_server_did_not_stop_is_drawn_as_a_lower_bound(by_transport_records):
    figure = figures.by_transport_figure(results_of(sweep_records(by_transport_records)))
    knee = figure.axes[0]
    bars = {(round(bar.get_x() + bar.get_width() / 2), container.get_label()): bar
            for container in knee.containers for bar in container}
    lower = bars.pop((1, "sockjs-node"))  # xhr-polling: the sweep ended, the server's limit lies above
    assert lower.get_hatch() and to_rgba(lower.get_facecolor()) == to_rgba("white")
    assert not any(bar.get_hatch() for bar in bars.values())
    arrows = [text for text in knee.texts if text.arrow_patch is not None]
    assert [arrow.xy for arrow in arrows] == [(lower.get_x() + lower.get_width() / 2, lower.get_height())]
    assert "≥30k" in [text.get_text() for text in knee.texts]
    legend = knee.get_legend()
    (at_least,) = [handle for handle, text in zip(legend.legend_handles, legend.get_texts())
                   if text.get_text().startswith("at least")]
    assert at_least.get_hatch() and "load client" in at_least.get_label().replace("\n", " ")
    assert not [text for text in legend.get_texts() if "+" in text.get_text()]
