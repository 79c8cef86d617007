"""The figures over time: a soak's memory and a rolling restart's sessions and lateness, second by second.

A rolling restart's rows share their scale, so that its runs compare at a glance; every
restart is shaded from its SIGTERM to its exit, then grey until its ``/healthz`` answers.
"""

import textwrap

from matplotlib.figure import Figure

from loadtest.results.summary import rolling_runs, rss_series, subtitle
from plots.canvas import BOUND_COLOR, new_figure, server_colors, tidy

BROKER_COLORS = ("#1f6fb4", "#e07b00", "#2a9d4b", "#9467bd", "#d62728", "#17becf", "#bcbd22", "#8c8c8c")
DOWN_COLOR = "#999999"
ROLLING_ROWS = ("sessions held\nat each broker", "new sessions a second\nat each broker",
                "delivery lateness\nper second (ms, log)")



def rss_over_time_figure(results):
    """Server RSS against time under the soak's held load, one line per server, the warm-up marked."""
    series = rss_series(results)
    if not series:
        return None
    figure, axes = new_figure("Server memory over time under a held load (flat is good)", results)
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
        tidy(axes)
        axes.set_xlim(0, seconds[-1] + 1)
        axes.legend(loc="best", fontsize=7, frameon=False)
    late.set_xlabel("seconds")


def _each_second(seconds, values):
    """A step line's points: each value from its second to the next, the last one's too."""
    return seconds + [seconds[-1] + 1], values + values[-1:]


def _or_nan(value):
    return float("nan") if value is None else value
