"""The latency figures: round trip against server messages/s, a panel per server on one scale, a line per level.

A step where the load client, not the server, was saturated is hollow: it measured the
client, not the server's limit. A step where the server was overloaded is crossed out.
"""

from matplotlib import colormaps
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from loadtest.results.summary import REALTIME_MS, curves, subtitle
from plots.canvas import BOUND_COLOR, server_colors, tidy, transport_suffix

LEVEL_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "h")
LEVEL_SHADES = 0.75  # of viridis, dark (few clients) to green (many): its yellow end is hard to see on white
LATENCY_COLUMNS = 2  # panels side by side in the latency figures
CLIENT_LIMITED_LABEL = "load client saturated,\nnot the server's limit"
OVERLOADED_LABEL = "server overloaded\n(its limit)"
STATISTIC_NAMES = {"mean": "mean", "p99": "99th percentile"}


def latency_figure(results, statistic="mean"):
    """Round trip (``mean`` or ``p99``) against server messages/s over the first transport swept: a
    panel per server, on one scale, a line per level; a step where the server was overloaded crossed
    out, one where the load client, not the server, was saturated hollow (it measured the client)."""
    lines = curves(results, statistic)
    if not lines:
        return None
    lines = [curve for curve in lines if curve.transport == lines[0].transport]
    name = STATISTIC_NAMES.get(statistic, statistic)
    servers = list(dict.fromkeys(curve.server for curve in lines))
    columns = min(len(servers), LATENCY_COLUMNS)
    rows = -(-len(servers) // columns)
    figure = Figure(figsize=(5.4 * columns + 2.6, 3.6 * rows + 1.4), dpi=100, layout="constrained")
    grid = figure.subplots(rows, columns, sharex=True, sharey=True, squeeze=False)
    figure.suptitle("Round trip (%s) against server messages/s%s, by server" % (
        name, transport_suffix(results, lines[0].transport)), fontsize=14, fontweight="bold")
    levels = sorted({curve.level for curve in lines})
    styles = {level: (colormaps["viridis"](LEVEL_SHADES * index / max(len(levels) - 1, 1)),
                      LEVEL_MARKERS[index % len(LEVEL_MARKERS)]) for index, level in enumerate(levels)}
    colors = server_colors(results.servers)
    for axes, server in zip(grid.flat, servers):
        tidy(axes)
        title = server if results.runtimes.get(server) is None else "%s (%s)" % (server, results.runtimes[server])
        axes.set_title(title, fontsize=11, fontweight="bold", color=colors[server])
        for curve in lines:
            if curve.server == server:
                _latency_line(axes, curve, styles[curve.level])
        axes.axhline(REALTIME_MS, color=BOUND_COLOR, linestyle="--", linewidth=1.2, label="_realtime")
        axes.set_xscale("log")
        axes.set_yscale("log")
    cells = list(grid.flat)
    for index in range(len(servers), len(cells)):  # the last row's empty cells: the cell above shows the x axis
        cells[index - columns].xaxis.set_tick_params(labelbottom=True)
        cells[index].remove()
    figure.supxlabel("server messages/s (deliveries to clients per second, log scale)\n" + subtitle(results),
                     fontsize=10)
    figure.supylabel("%s round trip (ms, log scale)" % name, fontsize=10)
    realtime = ("realtime: mean <= %.0f ms" if statistic == "mean"
                else "%.0f ms, the mean's\nrealtime bound") % REALTIME_MS
    # Beside the first row's last panel, below the figure's title: a figure legend "outside right
    # upper" takes the figure's top right corner, where a long title runs.
    grid[0, -1].legend(handles=_latency_legend(styles, realtime), title="clients", loc="upper left",
                       bbox_to_anchor=(1.02, 1.0), fontsize=9, frameon=False)
    return figure


def _latency_line(axes, curve, style):
    """One level's ``curve`` in the ``(colour, marker)`` ``style``: its steps filled, those the
    load client limited hollow, those that overloaded the server crossed out."""
    color, marker = style
    xs = [point.msgs_per_s for point in curve.points]
    ys = [point.rtt_ms for point in curve.points]
    measured = [index for index, point in enumerate(curve.points) if not point.client_limited]
    axes.plot(xs, ys, color=color, marker=marker, markevery=measured, markersize=5, linewidth=1.6, alpha=0.9,
              label="%d clients" % curve.level)
    client = [(point.msgs_per_s, point.rtt_ms) for point in curve.points if point.client_limited]
    if client:
        axes.plot(*zip(*client), linestyle="none", marker=marker, markersize=6, markerfacecolor="white",
                  markeredgecolor=color, markeredgewidth=1.4, label=CLIENT_LIMITED_LABEL)
    overloaded = [(point.msgs_per_s, point.rtt_ms) for point in curve.points
                  if point.overloaded and not point.client_limited]
    if overloaded:
        axes.plot(*zip(*overloaded), linestyle="none", marker="x", markersize=9, markeredgewidth=2,
                  color=BOUND_COLOR, label=OVERLOADED_LABEL)


def _latency_legend(styles, realtime):
    """The legend's handles: a line per level of ``{level: (colour, marker)}``, then what the marks
    say, then the dashed line at ``realtime``."""
    handles = [Line2D([], [], color=color, marker=marker, label="%d clients" % level)
               for level, (color, marker) in styles.items()]
    return handles + [
        Line2D([], [], color="#444444", marker="o", linestyle="none", label="step measured"),
        Line2D([], [], color="#444444", marker="o", linestyle="none", markerfacecolor="white",
               markeredgewidth=1.4, label=CLIENT_LIMITED_LABEL),
        Line2D([], [], color=BOUND_COLOR, marker="x", linestyle="none", markeredgewidth=2, label=OVERLOADED_LABEL),
        Line2D([], [], color=BOUND_COLOR, linestyle="--", label=realtime),
    ]
