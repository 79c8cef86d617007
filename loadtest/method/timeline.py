"""A run second by second: the sessions each broker took and lost, and how late each delivery was.

Rules:

- Seconds count from an ``origin`` on the monotonic clock, which every process of the
  machine shares: second ``s`` is ``[origin + s, origin + s + 1)``. What happens before the
  origin falls in second :data:`BEFORE`: sessions opened then are there at second 0, and
  none is a new session of any second. Brokers are numbered from 0.
- The clients count the sessions each broker took and lost, unless a proxy chose the
  brokers: then the brokers' own counts stand in the rows (:func:`counted_by_brokers`).
- A delivery's lateness (microseconds from publishing to delivery) is kept to
  :data:`SIGNIFICANT_BITS` significant bits (less than 0.2 % low) and counted per second:
  recording one costs a dictionary update and several processes' counts add up exactly.
  The deliveries to clients whose connection never ended are also counted apart (``uncut``).
- Percentiles are nearest-rank: the smallest value with at least p % of the counts at or below it.
"""

import collections
import math
import time
from typing import NamedTuple, Optional, Tuple

BEFORE = -1
SIGNIFICANT_BITS = 10


def coarse(us):
    """``us`` (a positive whole number) with its lower bits cleared, past the first :data:`SIGNIFICANT_BITS`."""
    shift = us.bit_length() - SIGNIFICANT_BITS
    return us if shift <= 0 else (us >> shift) << shift


class Timeline:
    """What one client process saw, second by second: sessions opened and ended at each broker, and each
    delivery's lateness (``record_value``, as a histogram's, so a connection can record into it)."""

    def __init__(self, clock=time.monotonic):
        self.origin = None
        self.opened = collections.defaultdict(collections.Counter)
        self.ended = collections.defaultdict(collections.Counter)
        self.lateness = collections.defaultdict(collections.Counter)
        self.uncut = collections.defaultdict(collections.Counter)
        self.uncut_clients = _UncutClients(self)
        self._clock = clock

    def start(self, origin):
        self.origin = origin

    def second(self):
        """The second it is now."""
        if self.origin is None:
            return BEFORE
        return max(BEFORE, math.floor(self._clock() - self.origin))

    def open(self, broker):
        self.opened[self.second()][broker] += 1

    def end(self, broker):
        self.ended[self.second()][broker] += 1

    def record_value(self, us):
        """A message delivered now, ``us`` microseconds after it was published."""
        self.lateness[self.second()][coarse(us)] += 1

    def report(self):
        """Its counts as plain data: ``{"opened": {second: {broker: n}}, "ended": ...,
        "lateness": {second: {us: n}}, "uncut": ...}``."""
        return {name: {second: dict(counts) for second, counts in getattr(self, name).items()}
                for name in ("opened", "ended", "lateness", "uncut")}


class _UncutClients:
    """What the connection of a client that has never lost one records into: lateness, and ``uncut`` too."""

    __slots__ = ("_timeline",)

    def __init__(self, timeline):
        self._timeline = timeline

    def record_value(self, us):
        timeline = self._timeline
        second, value = timeline.second(), coarse(us)
        timeline.lateness[second][value] += 1
        timeline.uncut[second][value] += 1


class Second(NamedTuple):
    """One second of a run, all processes together (:class:`loadtest.records.RollingSecond`)."""

    second: int
    connections: Tuple[int, ...]
    new_sessions: Tuple[int, ...]
    delivered: int
    p50_ms: Optional[float]
    p99_ms: Optional[float]
    max_ms: Optional[float]


def merge(reports, brokers, last=None):
    """The :class:`Second` rows, 0 to ``last`` (default: the last with anything), of every process's
    :meth:`Timeline.report`; and the lateness counts of each second, ``{second: Counter}``."""
    opened, ended, lateness = _added(reports, "opened"), _added(reports, "ended"), _added(reports, "lateness")
    if last is None:
        last = max([0] + [second for table in (opened, ended, lateness) for second in table])
    held = [0] * brokers
    for broker, count in opened.get(BEFORE, {}).items():
        held[broker] += count
    for broker, count in ended.get(BEFORE, {}).items():
        held[broker] -= count
    rows = []
    for second in range(0, last + 1):
        new = [opened.get(second, {}).get(broker, 0) for broker in range(brokers)]
        for broker in range(brokers):
            held[broker] += new[broker] - ended.get(second, {}).get(broker, 0)
        late = lateness.get(second, collections.Counter())
        rows.append(Second(second, tuple(held), tuple(new), sum(late.values()), percentile_ms(late, 50),
                           percentile_ms(late, 99), percentile_ms(late, 100)))
    return rows, lateness


def uncut_lateness(reports):
    """The lateness counts of the clients never cut, ``{second: Counter}``, of every process's report."""
    return _added(reports, "uncut")


class BrokerCount(NamedTuple):
    """What a broker's ``/stats`` said at the end of a second: sessions held, started since it began, its age."""

    held: int
    started: int
    uptime_s: float


def counted_by_brokers(rows, counts):
    """``rows`` with the sessions held and opened at each broker as the brokers counted them
    (``counts[second]``: a :class:`BrokerCount` or None for each). Opened: what the counter went up
    by since the broker's last answer (all of it in a new process), spread evenly over the seconds
    since then. A broker that did not answer holds none that second."""
    brokers = len(rows[0].connections) if rows else 0
    index = {row.second: n for n, row in enumerate(rows)}
    last = list(counts.get(BEFORE, [None] * brokers))
    answered = [BEFORE] * brokers
    held = [0 if count is None else count.held for count in last]
    holding, opened = [], [[0] * brokers for _ in rows]
    for row in rows:
        for broker, count in enumerate(counts.get(row.second, ())):
            if count is None:
                held[broker] = 0
                continue
            before = last[broker]
            fresh = before is None or count.uptime_s < before.uptime_s
            first = answered[broker] + 1
            if fresh:  # not before the process began
                first = max(first, row.second - math.floor(count.uptime_s))
            since = [opened[index[second]] for second in range(first, row.second + 1) if second in index]
            _spread(count.started if fresh else count.started - before.started, since, broker)
            held[broker] = count.held
            last[broker], answered[broker] = count, row.second
        holding.append(tuple(held))
    return [row._replace(connections=held_then, new_sessions=tuple(new))
            for row, held_then, new in zip(rows, holding, opened)]


def _spread(total, seconds, broker):
    """Add ``total`` to column ``broker`` of ``seconds``, as evenly as whole numbers go."""
    for n, new in enumerate(seconds):
        new[broker] += total * (n + 1) // len(seconds) - total * n // len(seconds)


def _added(reports, name):
    total = collections.defaultdict(collections.Counter)
    for report in reports:
        for second, counts in report[name].items():
            total[second].update(counts)
    return total


def percentile(counts, point):
    """The nearest-rank ``point``-th percentile (0 < point <= 100) of ``counts`` (``{value: n}``), or None if empty."""
    total = sum(counts.values())
    if not total:
        return None
    rank = max(1, math.ceil(total * point / 100.0))
    seen = 0
    for value in sorted(counts):
        seen += counts[value]
        if seen >= rank:
            return value
    return max(counts)


def percentile_ms(counts, point):
    """:func:`percentile` of lateness counts in microseconds, in milliseconds to 0.1 (None if empty)."""
    value = percentile(counts, point)
    return None if value is None else round(value / 1000.0, 1)


def within(lateness, first, last):
    """The lateness counts of seconds ``first`` to ``last`` added together."""
    total = collections.Counter()
    for second in range(first, last + 1):
        total.update(lateness.get(second, {}))
    return total
