"""The rooms figure: what a delivery costs the broker, and how late it comes, against the number of rooms.

A line is one load of ``python -m loadtest rooms`` (its server, transport, viewers, rooms per
viewer, skew and rate a room), a point each number of rooms it ran at; the x axis is
logarithmic, as a sweep's rooms are (1, 10, 100, 1000). A point without a figure is left out.
"""

from loadtest.results.summary import rooms_series
from plots.canvas import OTHER_COLORS, new_panels, server_colors

ROWS = ("broker CPU per delivery (µs)", "round trip p99 (ms)")


def rooms_figure(results):
    """CPU per delivery (top) and the p99 round trip (bottom) against the number of rooms, a line per load."""
    series = rooms_series(results)
    if not series:
        return None
    figure, (cpu, late) = new_panels("What a delivery costs against the number of rooms (flat is good)", results,
                                     (11, 7.6), 2)
    colors = server_colors(results.servers)
    styles = ("-", "--", ":", "-.")
    for index, (label, runs) in enumerate(series.items()):
        color = colors.get(runs[0].server) or OTHER_COLORS[0]
        style = styles[index % len(styles)]
        for axes, value in ((cpu, lambda run: run.cpu_us_per_delivery), (late, lambda run: run.rtt_ms["p99"])):
            points = [(run.rooms, value(run)) for run in runs if value(run) is not None]
            axes.plot([p[0] for p in points], [p[1] for p in points], color=color, linestyle=style, marker="o",
                      linewidth=1.8, markersize=4, label=label)
    for axes, ylabel in zip((cpu, late), ROWS):
        axes.set_xscale("log")
        axes.set_ylim(bottom=0)
        axes.set_ylabel(ylabel)
    late.set_xlabel("rooms (log)")
    # below the panels, so that the loads' long labels leave the panels, and the subtitle above them, the width
    figure.legend(*cpu.get_legend_handles_labels(), title="load", loc="outside lower center", fontsize=8, frameon=False)
    return figure
