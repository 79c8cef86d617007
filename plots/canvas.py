"""What every figure starts from: a colour per server, a figure of panels with the run's subtitle, the panels' look.

A server keeps its colour in every figure; a panel has a light grid behind its data and
no frame at the top and the right; a label names a transport only when the results hold several.
"""

import itertools

from matplotlib.figure import Figure

from loadtest.results.summary import subtitle

SERVER_COLORS = {
    "broker-cpython": "#1f6fb4",
    "broker-pypy": "#2a9d4b",
    "sockjs-node": "#e07b00",
    "sockjs-tornado": "#8c8c8c",
    "sockjs-go": "#00838f",
}
OTHER_COLORS = ("#9467bd", "#d62728", "#17becf", "#bcbd22")
BOUND_COLOR = "#c0392b"  # a bound or a limit: realtime, an overloaded step, a drain's bound


def server_colors(servers):
    """A stable colour per server: the five contenders keep theirs, others get the next free one."""
    others = iter(itertools.cycle(OTHER_COLORS))
    return {server: SERVER_COLORS.get(server) or next(others) for server in servers}


def new_figure(title, results, size=(11, 6.4)):
    """A figure of one panel (:func:`new_panels`) and that panel."""
    figure, (axes,) = new_panels(title, results, size, 1)
    return figure, axes


def new_panels(title, results, size, rows):
    """A figure of ``rows`` panels, one above the other, sharing their x axis; the run's subtitle on the first."""
    figure = Figure(figsize=size, dpi=100, layout="constrained")
    panels = figure.subplots(rows, 1, sharex=True, squeeze=False)[:, 0]
    figure.suptitle(title, fontsize=14, fontweight="bold")
    panels[0].set_title(subtitle(results), fontsize=9, color="#555555")
    for axes in panels:
        tidy(axes)
    return figure, list(panels)


def tidy(axes):
    """Every panel's look: a light grid behind the data, no frame at the top and the right."""
    axes.grid(True, which="major", color="#dddddd", linewidth=0.8)
    axes.set_axisbelow(True)
    for side in ("top", "right"):
        axes.spines[side].set_visible(False)


def transport_suffix(results, transport):
    """How a label names the transport: only when the results hold several."""
    return " over %s" % transport if len(results.transports) > 1 else ""


def load_label(clients, rate):
    """A fixed load as a label says it: clients, the rate each sends and the deliveries a second."""
    return "%s clients x %s msgs/s sent = %s deliveries/s" % (
        "{:,}".format(clients), "{:,.0f}".format(rate), "{:,.0f}".format(clients * rate))
