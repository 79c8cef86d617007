"""The verdict of a rolling restart (``python -m loadtest rolling``): was anything lost or
repeated, did the drain spread the reconnects, did deliveries stay on time?

Rules:

- The restarts last from the first SIGTERM until ``settle_s`` seconds (the clients' longest
  wait before they reconnect) after the last broker answered ``/healthz`` 200 again, in
  whole seconds. The steady seconds are every one before; a run without restarts is steady.
- Every run: no message lost, none delivered twice, no gap untold; and no gap told but
  through a failover (``--fail redis-primary``).
- With a drain (``drain_s`` above 0), also: in no second did any broker take more than
  :data:`NEW_SESSIONS_FACTOR` x (clients / brokers) / ``drain_s`` new sessions, the rate
  at which a drain hands on the clients of one broker of an even cluster; and the 99th
  percentile of the lateness of every delivery during the restarts is at most
  :data:`P99_FACTOR` x that of the steady seconds. Without a drain there is no period
  to spread over: its peak and percentiles are shown beside, not judged.
- A crash (``killed``, no drain): the p99 during the restarts of the deliveries to the clients
  whose connection never ended (those of the brokers still up) is at most :data:`P99_FACTOR` x
  the steady one; the cut clients' lateness is the crash, not the others' service.
"""

import dataclasses
import math
from typing import NamedTuple, Optional, Tuple

from loadtest.method import timeline

NEW_SESSIONS_FACTOR = 1.5
P99_FACTOR = 2.0


class Load(NamedTuple):
    """What the cluster held: ``clients`` over ``brokers``, each draining over ``drain_s`` seconds, or ``killed``."""

    clients: int
    brokers: int
    drain_s: float
    killed: bool = False


class Losses(NamedTuple):
    """Messages not delivered, delivered again, gaps told where none may be, ``silent`` gaps (skipped untold)."""

    lost: int
    duplicated: int
    gaps: int
    silent: int = 0


@dataclasses.dataclass(frozen=True)
class Verdict:
    """The figures judged and the ``failures``, each a sentence; None where a figure has nothing to stand on."""

    steady_p99_ms: Optional[float]
    restart_p99_ms: Optional[float]
    uncut_p99_ms: Optional[float]
    worst_second_p99_ms: Optional[float]
    peak_new_sessions: int
    peak_second: Optional[int]
    peak_broker: Optional[int]
    new_sessions_bound: Optional[float]
    p99_bound_ms: Optional[float]
    failures: Tuple[str, ...]

    @property
    def passed(self):
        return not self.failures


def restart_seconds(first_sigterm_s, last_healthy_s, settle_s):
    """``(first, last)``: the seconds of the run, counted from its origin, during the restarts."""
    return math.floor(first_sigterm_s), max(math.floor(first_sigterm_s), math.ceil(last_healthy_s + settle_s) - 1)


def judge(rows, lateness, window, load, losses, uncut=None):
    """The :class:`Verdict` of a run: its ``rows`` and ``lateness`` (:func:`loadtest.method.timeline.merge`),
    the ``window`` of its restarts (None: none), and the ``uncut`` clients' lateness, if counted."""
    restarted = window is not None
    if restarted:
        first, last = window
    else:
        first = rows[-1].second + 1 if rows else 0
        last = first - 1
    during = [row for row in rows if first <= row.second <= last]
    peak, peak_second, peak_broker = 0, None, None
    for row in during:
        for broker, count in enumerate(row.new_sessions):
            if count > peak:
                peak, peak_second, peak_broker = count, row.second, broker
    steady = timeline.percentile_ms(timeline.within(lateness, 0, first - 1), 99)
    restarting = timeline.percentile_ms(timeline.within(lateness, first, last), 99)
    uncut_p99 = None if uncut is None else timeline.percentile_ms(timeline.within(uncut, first, last), 99)
    worst = max((row.p99_ms for row in during if row.p99_ms is not None), default=None)
    failures = []
    for count, what in ((losses.lost, "message%s lost"), (losses.duplicated, "message%s delivered twice"),
                        (losses.gaps, "gap%s"), (losses.silent, "silent gap%s")):
        if count:
            failures.append("%d %s" % (count, what % ("" if count == 1 else "s")))
    bound = p99_bound = None
    if restarted and load.drain_s > 0:
        bound = NEW_SESSIONS_FACTOR * load.clients / load.brokers / load.drain_s
        if peak > bound:
            failures.append("%d new sessions in second %d at broker %d, over %g" % (
                peak, peak_second, peak_broker + 1, bound))
        p99_bound = _p99_bound(steady, restarting, "during the restarts", "during them", failures)
    elif restarted and load.killed and uncut is not None:
        p99_bound = _p99_bound(steady, uncut_p99, "of the uncut clients during the restarts",
                               "to an uncut client during them", failures)
    return Verdict(steady, restarting, uncut_p99, worst, peak, peak_second, peak_broker, bound, p99_bound,
                   tuple(failures))


def _p99_bound(steady, judged, what, unseen, failures):
    """:data:`P99_FACTOR` x the ``steady`` p99, the bound of the p99 ``judged``, or None if either has no
    delivery; a failure appended to ``failures`` for each of those and for a p99 over the bound."""
    if steady is None or judged is None:
        failures.append("no delivery %s to compare" % ("before the restarts" if steady is None else unseen))
        return None
    bound = round(P99_FACTOR * steady, 1)
    if judged > bound:
        failures.append("p99 %.1f ms %s, over %.1f (%gx the steady %.1f)" % (judged, what, bound, P99_FACTOR, steady))
    return bound
