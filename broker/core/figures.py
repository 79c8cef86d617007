"""What the broker's parts report: each part states its figures once, and ``GET /stats`` and
``GET /metrics`` are both made from them.

Rules this module keeps:

* A part states its figures once, beside the counters they read: ``FIGURES``, a tuple of
  :class:`Figure`, on its class (:class:`Reporting`). :mod:`broker.ops.catalogue` lists a
  running broker's parts, each at its place in ``/stats``; :mod:`broker.ops.api` renders
  ``/stats`` from them (:func:`document`), :mod:`broker.ops.metrics` renders ``/metrics``, and
  the monitoring page lists what that collector yields.
* A figure is read when ``/stats`` or ``/metrics`` is asked for, never counted: nothing here
  is on a message's way.
* A figure has a ``key`` in ``/stats`` (dotted for a nested one: ``"history.messages"``; ``""``
  for the part's whole entry), a :class:`Metric`, or both; one with neither is refused. A
  figure with one side only is so on purpose: a rate, a text, a bound, a histogram, or a
  figure whose two forms differ (then it is two figures, one a side).
* A metric is named without the broker's prefix and is one family, which figures of several
  parts may share (disconnects, by reason): each gives its values of the family's labels
  (``labels``). A figure whose value is a mapping gives one sample per item, in the
  mapping's order, its key the value of the family's last label.
* A value None has no sample, and a family without labels that has no sample is left out
  of ``/metrics``; in ``/stats`` it is null, unless the figure is ``optional``: then its key
  is left out.
* Nothing here does I/O or knows Prometheus.
"""

import dataclasses
import operator
from typing import Callable, Optional, Protocol, Tuple, Union

COUNTER = "counter"
GAUGE = "gauge"
HISTOGRAM = "histogram"
"""A :class:`broker.core.meters.LatencyHistogram`."""
KEYED_GAUGES = "keyed gauges"
"""A mapping: each number a gauge named after the metric's name and its key, a ``state``
text a gauge at 1 labelled with it (the cluster backplane's ``stats()``)."""
KINDS = (COUNTER, GAUGE, HISTOGRAM, KEYED_GAUGES)


@dataclasses.dataclass(frozen=True)
class Metric:
    """One family of ``/metrics``: its ``name`` without the broker's prefix, its ``kind``
    (one of :data:`KINDS`), its ``help`` text and its ``labels``' names."""

    name: str
    kind: str
    help: str
    labels: Tuple[str, ...] = ()

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError("%s: kind %r is none of %s" % (self.name, self.kind, ", ".join(KINDS)))


@dataclasses.dataclass(frozen=True)
class Figure:
    """One figure of a part: its ``key`` in ``/stats`` (None: in ``/metrics`` only), how to
    ``read`` it from its part (an attribute's dotted name, or a function of the part), its
    ``metric`` (None: in ``/stats`` only) and its values of the metric's labels."""

    key: Optional[str]
    read: Union[str, Callable[[object], object]]
    metric: Optional[Metric] = None
    labels: Tuple[str, ...] = ()
    optional: bool = False

    def __post_init__(self):
        if self.key is None and self.metric is None:
            raise ValueError("a figure needs a key in /stats, a metric, or both")
        fixed = len(self.labels)
        if self.metric is not None and fixed not in (len(self.metric.labels), len(self.metric.labels) - 1):
            raise ValueError("%s: labels %s for the metric's %s" % (self.metric.name, self.labels, self.metric.labels))

    def value(self, part):
        """This figure's value now, read from ``part``."""
        if isinstance(self.read, str):
            return operator.attrgetter(self.read)(part)
        return self.read(part)


class Reporting(Protocol):
    """A part that reports: its figures, stated once on its class."""

    FIGURES: Tuple[Figure, ...]


def through(attribute, figures):
    """``figures`` of the part another part holds in ``attribute``, as that other part's own."""
    held = operator.attrgetter(attribute)
    return tuple(dataclasses.replace(figure, read=lambda part, figure=figure: figure.value(held(part)))
                 for figure in figures)


def stats_of(part):
    """The ``/stats`` entry of ``part``: each of its figures that has a key, by its key."""
    entry = {}
    for figure in part.FIGURES:
        if figure.key is None:
            continue
        value = figure.value(part)
        if figure.optional and value is None:
            continue
        if figure.key == "":
            return value
        *path, last = figure.key.split(".")
        where = entry
        for name in path:
            where = where.setdefault(name, {})
        where[last] = value
    return entry


def document(parts):
    """The ``/stats`` document of ``parts``: ``(place, part)`` pairs in its order, each
    part's entry at its place (``""``: merged at the top)."""
    stats = {}
    for place, part in parts:
        entry = stats_of(part)
        if place:
            stats[place] = entry
        else:
            stats.update(entry)
    return stats
