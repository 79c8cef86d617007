"""The figures of a comparison, a soak and a rolling restart, drawn with matplotlib (Agg, no pyplot state).

Each ``*_figure`` function returns a :class:`matplotlib.figure.Figure`, or None
when the results hold nothing to draw; :func:`write_all` saves them as PNG and SVG.
Results over several transports get the figure by transport; the figures of one
fixed load or of idle connections by server then show the first transport.
"""

import itertools
import os
import textwrap

from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from loadtest.results.summary import (REALTIME_MS, SERVER, cost_rows, curves, fixed_loads, realtime_capacity,
                                      rolling_runs, rss_series, subtitle)

SERVER_COLORS = {
    "broker-cpython": "#1f6fb4",
    "broker-pypy": "#2a9d4b",
    "sockjs-node": "#e07b00",
    "sockjs-tornado": "#8c8c8c",
    "sockjs-go": "#00838f",
}
OTHER_COLORS = ("#9467bd", "#d62728", "#17becf", "#bcbd22")
LEVEL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
LEVEL_LINES = ("-", "--", ":", "-.")
STATISTIC_NAMES = {"mean": "mean", "p99": "99th percentile"}
BROKER_COLORS = ("#1f6fb4", "#e07b00", "#2a9d4b", "#9467bd", "#d62728", "#17becf", "#bcbd22", "#8c8c8c")
BOUND_COLOR = "#c0392b"
DOWN_COLOR = "#999999"
ROLLING_ROWS = ("sessions held\nat each broker", "new sessions a second\nat each broker",
                "delivery lateness\nper second (ms, log)")


def server_colors(servers):
    """A stable colour per server: the five contenders keep theirs, others get the next free one."""
    others = iter(itertools.cycle(OTHER_COLORS))
    return {server: SERVER_COLORS.get(server) or next(others) for server in servers}


def _new_figure(title, results, size=(11, 6.4)):
    figure, (axes,) = _new_panels(title, results, size, 1)
    return figure, axes


def _new_panels(title, results, size, rows):
    """A figure of ``rows`` panels, one above the other, sharing their x axis; the run's subtitle on the first."""
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    panels = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    figure.suptitle(title, fontsize=14, fontweight="bold")
    panels[0].set_title(subtitle(results), fontsize=9, color="#555555")
    for axes in panels:
        axes.grid(True, which="major", color="#dddddd", linewidth=0.8)
        axes.set_axisbelow(True)
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
    return figure, list(panels)


def latency_figure(results, statistic="mean"):
    """Round trip (``mean`` or ``p99``) against server messages/s over the first transport swept,
    one line per server and level."""
    lines = curves(results, statistic)
    if not lines:
        return None
    lines = [curve for curve in lines if curve.transport == lines[0].transport]
    figure, axes = _new_figure("Round trip (%s) against server messages/s%s" % (
        STATISTIC_NAMES.get(statistic, statistic), _transport_suffix(results, lines[0].transport)), results)
    colors = server_colors(results.servers)
    levels = sorted({curve.level for curve in lines})
    markers = dict(zip(levels, itertools.cycle(LEVEL_MARKERS)))
    styles = dict(zip(levels, itertools.cycle(LEVEL_LINES)))
    for curve in lines:
        xs = [point[0] for point in curve.points]
        ys = [point[1] for point in curve.points]
        axes.plot(xs, ys, color=colors[curve.server], marker=markers[curve.level], markersize=5,
                  linestyle=styles[curve.level],
                  linewidth=1.6, alpha=0.9, label="%s, %d clients" % (curve.server, curve.level))
        overloaded = [(x, y) for x, y, over in curve.points if over]
        if overloaded:
            axes.plot(*zip(*overloaded), linestyle="none", marker="x", markersize=9,
                      markeredgewidth=2, color="#c0392b", label="_overloaded")
    axes.axhline(REALTIME_MS, color="#c0392b", linestyle="--", linewidth=1.2, label="_realtime")
    axes.annotate(("realtime: %.0f ms" if statistic == "mean" else "%.0f ms") % REALTIME_MS, xy=(0.005, REALTIME_MS), xycoords=("axes fraction", "data"),
                  xytext=(0, 3), textcoords="offset points", color="#c0392b", fontsize=9, va="bottom")
    axes.set_xscale("log")
    axes.set_yscale("log")
    axes.set_xlabel("server messages/s (deliveries to clients per second, log scale)")
    axes.set_ylabel("%s round trip (ms, log scale)" % STATISTIC_NAMES.get(statistic, statistic))
    server_handles = [Line2D([], [], color=colors[s], linewidth=3, label=s)
                      for s in results.servers if any(c.server == s for c in lines)]
    level_handles = [Line2D([], [], color="#444444", marker=markers[level], linestyle=styles[level],
                            label="%d clients" % level) for level in levels]
    level_handles.append(Line2D([], [], color="#c0392b", marker="x", linestyle="none",
                                markeredgewidth=2, label="overloaded step"))
    first = axes.legend(handles=server_handles, title="server", loc="upper left",
                        bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    axes.add_artist(first)
    axes.legend(handles=level_handles, title="concurrency", loc="upper left",
                bbox_to_anchor=(1.01, 0.62), fontsize=9, frameon=False)
    return figure


def _bar_figure(title, xlabel, ylabel, results, bars, value_format, reference=None):
    figure, axes = _new_figure(title, results, size=(9, 5.8))
    colors = server_colors(results.servers)
    names = [name for name, _ in bars]
    values = [value for _, value in bars]
    drawn = axes.bar(names, values, color=[colors[name] for name in names], width=0.6)
    axes.bar_label(drawn, labels=[value_format % value for value in values], padding=3, fontsize=10)
    if reference is not None:
        label, value = reference
        axes.axhline(value, color="#c0392b", linestyle="--", linewidth=1.2, label=label)
        axes.legend(loc="upper left", fontsize=9, frameon=False)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    top = max(values + [reference[1] if reference else 0])
    if top > 0:
        axes.set_ylim(0, top * 1.18)
    axes.grid(False, axis="x")
    return figure


def _transport_suffix(results, transport):
    """How an x label names the transport: only when the results hold several."""
    return " over %s" % transport if len(results.transports) > 1 else ""


def _load_label(clients, rate):
    return "%s clients x %s msgs/s sent = %s deliveries/s" % (
        "{:,}".format(clients), "{:,.0f}".format(rate), "{:,.0f}".format(clients * rate))


def cpu_figure(results):
    """Server CPU per delivered message at the first fixed load over the first transport, with the bare
    send loop as the floor."""
    records = [r for r in results.cpu_per_msg if r.cpu_us_per_msg is not None]
    if not records:
        return None
    load = records[0]
    records = [r for r in records if (r.level, r.rate, r.transport) == (load.level, load.rate, load.transport)]
    xlabel = "server, at %s%s" % (_load_label(load.level, load.rate), _transport_suffix(results, load.transport))
    reference = None
    if results.floor and results.floor.cpu_us_per_send is not None:
        reference = ("floor: bare send loop, %.2f µs per send" % results.floor.cpu_us_per_send,
                     results.floor.cpu_us_per_send)
    bars = [(r.server, r.cpu_us_per_msg) for r in records]
    return _bar_figure("Server CPU per delivered message (lower is better)", xlabel,
                       "server CPU per delivered message (µs)", results, bars, "%.2f µs", reference)


def rss_figure(results):
    """Resident memory per idle connection over the first transport, by server."""
    records = [r for r in results.idle_rss if r.rss_per_conn_kb is not None]
    if not records:
        return None
    records = [r for r in records if r.transport == records[0].transport]
    xlabel = "server, holding %s idle connections%s" % (
        "{:,}".format(records[0].connections), _transport_suffix(results, records[0].transport))
    bars = [(r.server, r.rss_per_conn_kb) for r in records]
    return _bar_figure("Memory per idle connection (lower is better)", xlabel,
                       "server RSS per idle connection (KiB)", results, bars, "%.1f KiB")


# (figure, axis label, bar label format, axis scale): round trips span milliseconds to seconds.
BY_TRANSPORT_PANELS = (
    ("cpu_us_per_msg", "server CPU per\ndelivered message (µs)", "%.2f", "linear"),
    ("p99_ms", "99th percentile round\ntrip (ms, log scale)", "%.1f", "log"),
    ("rss_per_conn_kb", "server RSS per idle\nconnection (KiB)", "%.1f", "linear"),
)
KNEE_LABEL = "knee: thousand\ndeliveries/s kept\nrealtime"
UPRIGHT_LABELS_OVER = 3  # servers in a group


def _by_transport_panels(results):
    """The panels of the figure by transport that have figures over more than one transport:
    ``(axis label, axis scale, {(transport, server): (height, bar label)}, what it measured)``
    each, the knee first if the run swept, then the costs of :data:`BY_TRANSPORT_PANELS`."""
    panels = []
    level, knees = _knees(results)
    if len({transport for transport, _ in knees}) > 1:
        panels.append((KNEE_LABEL, "linear", knees, "knee (mean round trip <= %.0f ms) at %s clients, + where "
                       "not stopped by the server" % (REALTIME_MS, "{:,}".format(level))))
    rows = cost_rows(results)
    for key, ylabel, value_format, scale in BY_TRANSPORT_PANELS:
        bars = {(row["transport"], row["server"]): (row[key], value_format % row[key])
                for row in rows if row[key] is not None}
        if len({transport for transport, _ in bars}) > 1:
            measured = ("RSS holding %s idle connections" % "{:,}".format(results.idle_rss[0].connections)
                        if key == "rss_per_conn_kb" else
                        "CPU and round trip at %s" % _load_label(*fixed_loads(results)[0]))
            panels.append((ylabel, scale, bars, measured))
    return panels


def _knees(results):
    """The clients of the knees drawn (the first fixed load's, if swept, else the first level
    swept) and ``{(transport, server): (thousands of msgs/s, label)}`` at that level; a ``+`` says
    the server did not stop it (:func:`~loadtest.results.summary.realtime_capacity`)."""
    capacity = [row for row in realtime_capacity(results) if row.msgs_per_s is not None]
    if not capacity:
        return None, {}
    levels = [row.level for row in capacity]
    loads = fixed_loads(results)
    level = loads[0][0] if loads and loads[0][0] in levels else levels[0]
    return level, {(row.transport, row.server): (row.msgs_per_s / 1000.0, "%.0fk%s" % (
        row.msgs_per_s / 1000.0, "" if row.limit == SERVER else "+")) for row in capacity if row.level == level}


def by_transport_figure(results):
    """The knee at one level, if swept, CPU per delivered message and the 99th percentile round
    trip at the first fixed load, and RSS per idle connection, each if measured over several
    transports, grouped by transport, a bar per server; None if none is."""
    panels = _by_transport_panels(results)
    if not panels:
        return None
    transports = results.transports
    shown = {server for _, _, bars, _ in panels for _, server in bars}
    servers = [server for server in results.servers if server in shown]
    title = ("Servers by transport: knee (higher is better) and costs (lower is better)"
             if panels[0][0] == KNEE_LABEL else "Server costs by transport (lower is better)")
    figure, axes_list = _new_panels(title, results, (11, 3.2 * len(panels) + 1.2), len(panels))
    colors = server_colors(results.servers)
    width = 0.8 / len(servers)
    upright = len(servers) > UPRIGHT_LABELS_OVER  # side by side, narrow bars' labels would overlap
    for axes, (ylabel, scale, bars, _) in zip(axes_list, panels):
        axes.set_yscale(scale)
        for index, server in enumerate(servers):
            drawn = [(position, bars[(transport, server)]) for position, transport in enumerate(transports)
                     if (transport, server) in bars]
            if not drawn:
                continue
            drawn_bars = axes.bar([position + (index - (len(servers) - 1) / 2) * width for position, _ in drawn],
                                  [height for _, (height, _) in drawn], width=width * 0.92, color=colors[server],
                                  label=server)
            axes.bar_label(drawn_bars, labels=[label for _, (_, label) in drawn], padding=2, fontsize=7,
                           rotation=90 if upright else 0)
        axes.set_ylabel(ylabel)
        heights = [height for height, _ in bars.values() if height > 0]
        if scale == "log" and heights:
            axes.set_ylim(min(heights) / 2, max(heights) * (8 if upright else 4))
        elif heights:
            axes.set_ylim(0, max(heights) * (1.35 if upright else 1.18))
        axes.grid(False, axis="x")
    axes_list[-1].set_xticks(range(len(transports)), transports)
    axes_list[-1].set_xlabel(_by_transport_xlabel(panels))
    axes_list[0].legend(title="server", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    return figure


def _by_transport_xlabel(panels):
    """What the figure by transport's ``panels`` measured, each said once: the knee's clients on a
    line of its own, then the fixed load and the idle connections."""
    said = list(dict.fromkeys(measured for _, _, _, measured in panels))
    if panels[0][0] == KNEE_LABEL and len(said) > 1:
        return "transport; %s\n%s" % (said[0], "; ".join(said[1:]))
    return "transport; " + "; ".join(said)


def rss_over_time_figure(results):
    """Server RSS against time under the soak's held load, one line per server, the warm-up marked."""
    series = rss_series(results)
    if not series:
        return None
    figure, axes = _new_figure("Server memory over time under a held load (flat is good)", results)
    colors = server_colors(results.servers)
    verdicts = {r.server: r.verdict for r in results.soaks}
    for server, points in series.items():
        label = server if verdicts.get(server) is None else "%s: %s" % (server, verdicts[server])
        axes.plot([p[0] for p in points], [p[1] for p in points], color=colors[server], linewidth=1.8,
                  marker="o", markersize=2.5, label=label)
    xlabel = "minutes under load"
    if results.soaks:
        load = results.soaks[0]
        xlabel += ", %s clients x %s msgs/s sent" % ("{:,}".format(load.clients), "{:,.0f}".format(load.rate))
        warmup = load.warmup_s / 60.0
        axes.axvline(warmup, color="#555555", linestyle=":", linewidth=1.2, label="_warmup")
        axes.annotate("end of warm-up", xy=(warmup, 0.01), xycoords=("data", "axes fraction"), xytext=(3, 0),
                      textcoords="offset points", color="#555555", fontsize=9, va="bottom")
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0, top=max(p[1] for points in series.values() for p in points) * 1.15)
    axes.set_xlabel(xlabel)
    axes.set_ylabel("server RSS (MB)")
    axes.legend(title="server", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9, frameon=False)
    return figure


def rolling_figure(results):
    """Each rolling restart in a column, a server's runs side by side (with a drain, then without) and
    servers one under the other: the sessions each broker held, the new sessions it took each second
    (with the drain's bound) and the p50 and p99 lateness of each second's deliveries (with twice the
    steady p99), every restart shaded from its SIGTERM to its exit (the broker's colour) and on to
    ``/healthz`` 200 (grey). Rows share their scale, so that the runs compare at a glance."""
    runs = [run for run in rolling_runs(results) if run.seconds]
    if not runs:
        return None
    servers = list(dict.fromkeys(run.server for run in runs))
    columns = max(sum(1 for run in runs if run.server == server) for server in servers)
    rows = len(ROLLING_ROWS) * len(servers)
    figure = Figure(figsize=(6.2 * columns + 1.2, 2.5 * rows + 1.2), dpi=100, layout="constrained")
    grid = figure.subplots(rows, columns, squeeze=False, sharey="row")
    figure.suptitle("Rolling restart: every broker restarted in turn, with a drain and without",
                    fontsize=14, fontweight="bold")
    for top, server in enumerate(servers):
        mine = [run for run in runs if run.server == server]
        for column in range(columns):
            panels = grid[top * len(ROLLING_ROWS):(top + 1) * len(ROLLING_ROWS), column]
            if column >= len(mine):
                for axes in panels:
                    axes.set_visible(False)
                continue
            _rolling_column(panels, mine[column])
            if column == 0:
                for axes, label in zip(panels, ROLLING_ROWS):
                    axes.set_ylabel(label)
        for held_or_new in grid[top * len(ROLLING_ROWS):top * len(ROLLING_ROWS) + 2, 0]:
            held_or_new.set_ylim(bottom=0)  # once every column is drawn: the row's scale is all of theirs
    figure.supxlabel("seconds since the first message; shaded: from a broker's SIGTERM to its exit, then grey "
                     "until its /healthz answers 200\n" + subtitle(results), fontsize=9, color="#555555")
    return figure


def _rolling_column(panels, run):
    """One rolling restart (a :class:`loadtest.results.summary.RollingRun`) in three ``panels``."""
    held, new, late = panels
    seconds = [row.second for row in run.seconds]
    brokers = len(run.seconds[0].connections)
    verdict = run.summary and ("passed" if not run.summary.failures else "failed: %s" % "; ".join(run.summary.failures))
    title = "%s, %s" % (run.server, "drain %g s" % run.drain_s if run.drain_s else "no drain (all closed at once)")
    if run.summary is not None:
        title += "\n" + textwrap.fill("%s clients, %g msgs/s; %s" % (
            "{:,}".format(run.summary.clients), run.summary.rate, verdict), 72)
    held.set_title(title, fontsize=10)
    for broker in range(brokers):
        color = BROKER_COLORS[broker % len(BROKER_COLORS)]
        held.plot([second + 1 for second in seconds], [row.connections[broker] for row in run.seconds],
                  color=color, linewidth=1.8, label="broker %d" % (broker + 1))
        new.step(*_each_second(seconds, [row.new_sessions[broker] for row in run.seconds]), where="post",
                 color=color, linewidth=1.4, label="broker %d" % (broker + 1))
    for statistic, color, width in (("p50", "#444444", 1.2), ("p99", "#000000", 2.0)):
        late.step(*_each_second(seconds, [_or_nan(row.delivery_ms[statistic]) for row in run.seconds]),
                  where="post", color=color, linewidth=width, label=statistic)
    late.set_yscale("log")
    summary = run.summary
    if summary is not None and summary.new_sessions_bound is not None:
        new.axhline(summary.new_sessions_bound, color=BOUND_COLOR, linestyle="--", linewidth=1.2,
                    label="bound: 1.5 x clients per broker / drain")
    if summary is not None and summary.p99_bound_ms is not None:
        late.axhline(summary.p99_bound_ms, color=BOUND_COLOR, linestyle="--", linewidth=1.2,
                     label="bound: 2 x steady p99")
    for restart in run.restarts:
        color = BROKER_COLORS[(restart.broker - 1) % len(BROKER_COLORS)]
        back = restart.healthy_s if restart.healthy_s is not None else restart.listening_s
        for axes in panels:
            axes.axvspan(restart.sigterm_s, restart.exited_s, color=color, alpha=0.16, linewidth=0)
            axes.axvspan(restart.exited_s, back, color=DOWN_COLOR, alpha=0.25, linewidth=0)
        held.annotate("broker %d" % restart.broker, xy=(restart.sigterm_s, 1.0), xycoords=("data", "axes fraction"),
                      xytext=(2, -2), textcoords="offset points", fontsize=8, va="top", color=color)
    for axes in panels:
        axes.grid(True, which="major", color="#dddddd", linewidth=0.8)
        axes.set_axisbelow(True)
        for side in ("top", "right"):
            axes.spines[side].set_visible(False)
        axes.set_xlim(0, seconds[-1] + 1)
        axes.legend(loc="best", fontsize=7, frameon=False)
    late.set_xlabel("seconds")


def _each_second(seconds, values):
    """A step line's points: each value from its second to the next, the last one's too."""
    return seconds + [seconds[-1] + 1], values + values[-1:]


def _or_nan(value):
    return float("nan") if value is None else value


FIGURES = (
    ("rtt_mean", lambda results: latency_figure(results, "mean")),
    ("rtt_p99", lambda results: latency_figure(results, "p99")),
    ("cpu_per_msg", cpu_figure),
    ("idle_rss", rss_figure),
    ("by_transport", by_transport_figure),
    ("rss_over_time", rss_over_time_figure),
    ("rolling_restart", rolling_figure),
)


def write_all(results, directory):
    """Save every figure the results allow as ``NAME.png`` and ``NAME.svg``; returns (written, skipped)."""
    os.makedirs(directory, exist_ok=True)
    written, skipped = [], []
    for name, draw in FIGURES:
        figure = draw(results)
        if figure is None:
            skipped.append(name)
            continue
        for extension in ("png", "svg"):
            path = os.path.join(directory, "%s.%s" % (name, extension))
            figure.savefig(path)
            written.append(path)
    return written, skipped
