"""The figures of a comparison, a soak, a rolling restart and a rooms run, drawn with matplotlib (Agg, no pyplot state).

Each ``*_figure`` function (of :mod:`plots.latency`, :mod:`plots.bars`,
:mod:`plots.over_time` and :mod:`plots.room_costs`) returns a :class:`matplotlib.figure.Figure`, or None
when the results hold nothing to draw; :func:`write_all` saves them as PNG and SVG.
Results over several transports get the figure by transport; the figures of one
fixed load or of idle connections by server then show the first transport.
"""

import os

from plots.bars import by_transport_figure, cpu_figure, rss_figure
from plots.latency import latency_figure
from plots.over_time import rolling_figure, rss_over_time_figure
from plots.room_costs import rooms_figure

FIGURES = (
    ("rtt_mean", lambda results: latency_figure(results, "mean")),
    ("rtt_p99", lambda results: latency_figure(results, "p99")),
    ("cpu_per_msg", cpu_figure),
    ("idle_rss", rss_figure),
    ("by_transport", by_transport_figure),
    ("rss_over_time", rss_over_time_figure),
    ("rolling_restart", rolling_figure),
    ("rooms", rooms_figure),
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
