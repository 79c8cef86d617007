"""The bar figures: CPU per delivered message and memory per idle connection by server, and the figure by transport.

A bar is a measurement; a knee the server did not stop (the ``+`` of the tables) is a lower
bound, drawn as one: hatched, with an arrow up and ``≥`` before its value.
"""

from matplotlib.patches import Patch

from loadtest.results.summary import REALTIME_MS, SERVER, cost_rows, fixed_loads, realtime_capacity
from plots.canvas import BOUND_COLOR, load_label, new_figure, new_panels, server_colors, transport_suffix


def _bar_figure(title, xlabel, ylabel, results, bars, value_format, reference=None):
    figure, axes = new_figure(title, results, size=(9, 5.8))
    colors = server_colors(results.servers)
    names = [name for name, _ in bars]
    values = [value for _, value in bars]
    drawn = axes.bar(names, values, color=[colors[name] for name in names], width=0.6)
    axes.bar_label(drawn, labels=[value_format % value for value in values], padding=3, fontsize=10)
    if reference is not None:
        label, value = reference
        axes.axhline(value, color=BOUND_COLOR, linestyle="--", linewidth=1.2, label=label)
        axes.legend(loc="upper left", fontsize=9, frameon=False)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    top = max(values + [reference[1] if reference else 0])
    if top > 0:
        axes.set_ylim(0, top * 1.18)
    axes.grid(False, axis="x")
    return figure


def cpu_figure(results):
    """Server CPU per delivered message at the first fixed load over the first transport, with the bare
    send loop as the floor."""
    records = [r for r in results.cpu_per_msg if r.cpu_us_per_msg is not None]
    if not records:
        return None
    load = records[0]
    records = [r for r in records if (r.level, r.rate, r.transport) == (load.level, load.rate, load.transport)]
    xlabel = "server, at %s%s" % (load_label(load.level, load.rate), transport_suffix(results, load.transport))
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
        "{:,}".format(records[0].connections), transport_suffix(results, records[0].transport))
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
AT_LEAST_LABEL = "at least: the load\nclient or the sweep's\nend stopped it, not\nthe server"
AT_LEAST_HATCH = "////"
ARROW_PT = 14  # the arrow above a knee that is a lower bound
UPRIGHT_LABELS_OVER = 3  # servers in a group


def _by_transport_panels(results):
    """The panels of the figure by transport that have figures over more than one transport:
    ``(axis label, axis scale, {(transport, server): (height, bar label, at least)}, what it measured)``
    each, the knee first if the run swept, then the costs of :data:`BY_TRANSPORT_PANELS`; ``at least``:
    the bar is a lower bound (a knee the server did not stop)."""
    panels = []
    level, knees = _knees(results)
    if len({transport for transport, _ in knees}) > 1:
        panels.append((KNEE_LABEL, "linear", knees, "knee (mean round trip <= %.0f ms) at %s clients"
                       % (REALTIME_MS, "{:,}".format(level))))
    rows = cost_rows(results)
    for key, ylabel, value_format, scale in BY_TRANSPORT_PANELS:
        bars = {(row["transport"], row["server"]): (row[key], value_format % row[key], False)
                for row in rows if row[key] is not None}
        if len({transport for transport, _ in bars}) > 1:
            measured = ("RSS holding %s idle connections" % "{:,}".format(results.idle_rss[0].connections)
                        if key == "rss_per_conn_kb" else
                        "CPU and round trip at %s" % load_label(*fixed_loads(results)[0]))
            panels.append((ylabel, scale, bars, measured))
    return panels


def _knees(results):
    """The clients of the knees drawn (the first fixed load's, if swept, else the first level
    swept) and ``{(transport, server): (thousands of msgs/s, label, at least)}`` at that level: ``at
    least`` (and ``≥`` in the label) where the server did not stop it, so that its limit lies above
    (the ``+`` of the tables; :func:`~loadtest.results.summary.realtime_capacity`)."""
    capacity = [row for row in realtime_capacity(results) if row.msgs_per_s is not None]
    if not capacity:
        return None, {}
    levels = [row.level for row in capacity]
    loads = fixed_loads(results)
    level = loads[0][0] if loads and loads[0][0] in levels else levels[0]
    return level, {(row.transport, row.server): (row.msgs_per_s / 1000.0, "%s%.0fk" % (
        "" if row.limit == SERVER else "≥", row.msgs_per_s / 1000.0), row.limit != SERVER)
        for row in capacity if row.level == level}


def by_transport_figure(results):
    """The knee at one level, if swept, CPU per delivered message and the 99th percentile round
    trip at the first fixed load, and RSS per idle connection, each if measured over several
    transports, grouped by transport, a bar per server; None if none is. A knee the server did not
    stop is a lower bound: hatched, with an arrow up."""
    panels = _by_transport_panels(results)
    if not panels:
        return None
    transports = results.transports
    shown = {server for _, _, bars, _ in panels for _, server in bars}
    servers = [server for server in results.servers if server in shown]
    title = ("Servers by transport: knee (higher is better) and costs (lower is better)"
             if panels[0][0] == KNEE_LABEL else "Server costs by transport (lower is better)")
    figure, axes_list = new_panels(title, results, (11, 3.2 * len(panels) + 1.2), len(panels))
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
                                  [height for _, (height, _, _) in drawn], width=width * 0.92, color=colors[server],
                                  label=server)
            axes.bar_label(drawn_bars, labels=["" if at_least else label for _, (_, label, at_least) in drawn],
                           padding=2, fontsize=7, rotation=90 if upright else 0)
            for bar, (_, (_, label, at_least)) in zip(drawn_bars, drawn):
                if at_least:
                    _at_least(axes, bar, label, upright)
        axes.set_ylabel(ylabel)
        heights = [height for height, _, _ in bars.values() if height > 0]
        headroom = 1.5 if any(at_least for _, _, at_least in bars.values()) else 1.18
        if scale == "log" and heights:
            axes.set_ylim(min(heights) / 2, max(heights) * (8 if upright else 4))
        elif heights:
            axes.set_ylim(0, max(heights) * (headroom + (0.17 if upright else 0)))
        axes.grid(False, axis="x")
    axes_list[-1].set_xticks(range(len(transports)), transports)
    axes_list[-1].set_xlabel(_by_transport_xlabel(panels))
    handles = [Patch(facecolor=colors[server], label=server) for server in servers]  # not a hatched bar's look
    if any(at_least for _, _, bars, _ in panels for _, _, at_least in bars.values()):
        handles.append(Patch(facecolor="white", edgecolor="#555555", hatch=AT_LEAST_HATCH, label=AT_LEAST_LABEL))
    axes_list[0].legend(handles=handles, title="server", loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=9,
                        frameon=False)
    return figure


def _at_least(axes, bar, label, upright):
    """Draw ``bar`` as a lower bound: hatched in its colour on white, an arrow up from its top, then
    its ``label``."""
    color = bar.get_facecolor()
    bar.set_facecolor("white")
    bar.set_edgecolor(color)
    bar.set_hatch(AT_LEAST_HATCH)
    top = (bar.get_x() + bar.get_width() / 2, bar.get_height())
    axes.annotate("", xy=top, xytext=(0, ARROW_PT), textcoords="offset points",
                  arrowprops={"arrowstyle": "<|-", "color": color, "linewidth": 1.5, "shrinkA": 0, "shrinkB": 0})
    axes.annotate(label, xy=top, xytext=(0, ARROW_PT + 2), textcoords="offset points", ha="center", va="bottom",
                  fontsize=7, rotation=90 if upright else 0)


def _by_transport_xlabel(panels):
    """What the figure by transport's ``panels`` measured, each said once: the knee's clients on a
    line of its own, then the fixed load and the idle connections."""
    said = list(dict.fromkeys(measured for _, _, _, measured in panels))
    if panels[0][0] == KNEE_LABEL and len(said) > 1:
        return "transport; %s\n%s" % (said[0], "; ".join(said[1:]))
    return "transport; " + "; ".join(said)
