"""Liveness: whether a message would get through now, not whether the process answers.

Rules this module keeps:

* The event loop is watched by a tick every :data:`TICK_S`; how late a tick
  ran is the loop's lag. A broker whose loop lagged by more than
  :data:`LAG_BOUND_S` within the last :data:`LAG_WINDOW_S`, or whose next
  tick is that late already, is not healthy: its clients waited that long
  for what it had to send them.
* In a cluster a message reaches clients only through the backplane's read
  loop. The broker's own audience report, a write to Redis every second,
  must come back through that loop (:meth:`Liveness.came_back`) within
  :data:`ROUND_TRIP_BOUND_S`, or the broker is not healthy: a read loop that
  stopped, a connection that answers nothing, a Redis that takes no writes
  all stop that round trip, whatever else still answers.
* Two verdicts, for ``/healthz``: :meth:`Liveness.lagging` (the loop was
  held up: the broker may take no new client for a while, and keeps those it
  has, which it serves again) and :meth:`Liveness.stalled` (its clients get
  nothing through it: a proxy should move them). None: healthy. The figures
  are the lag and the round trip's age, for ``/stats`` and ``/metrics``.
* No I/O: the caller gives the time, ``time.monotonic()``.
"""

from broker.core.figures import GAUGE, Figure, Metric

TICK_S = 0.25
LAG_BOUND_S = 2.0
LAG_WINDOW_S = 5.0
ROUND_TRIP_BOUND_S = 5.0


class Liveness:
    """The loop's lag and, with ``round_trips`` (a cluster), the age of the last round trip,
    as of ``now`` (when the broker started)."""

    def __init__(self, now, round_trips=False):
        self.lag_s = 0.0
        self._lagged_at = None
        self._lagged_by = 0.0
        self._came_back_at = now if round_trips else None
        self.ticked_at = now
        self._next_tick = now + TICK_S

    def ticked(self, late_s, now):
        """The loop's tick ran ``late_s`` seconds after its time, at ``now``."""
        self.lag_s = late_s
        self.ticked_at = now
        self._next_tick = now + TICK_S
        if late_s > LAG_BOUND_S:
            self._lagged_at, self._lagged_by = now, late_s

    def came_back(self, now):
        """The broker's own latest write came back through its read loop at ``now``."""
        self._came_back_at = now

    def wait_from(self, now):
        """Count the round trip's age from ``now``: the backplane is up again, and the first
        write of its own since is on its way (an outage is not a stall)."""
        self._came_back_at = now

    def round_trip_age(self, now):
        """Seconds since the last round trip (None for a broker alone)."""
        return None if self._came_back_at is None else max(0.0, now - self._came_back_at)

    def lagging(self, now):
        """Why the event loop held messages up, lately or now, or None."""
        late_s = now - self._next_tick
        if late_s > LAG_BOUND_S:
            return "the event loop is %.1f s late (over %g s)" % (late_s, LAG_BOUND_S)
        if self._lagged_at is not None and now - self._lagged_at <= LAG_WINDOW_S:
            return "the event loop lagged by %.1f s (over %g s) %.0f s ago" % (
                self._lagged_by, LAG_BOUND_S, now - self._lagged_at)
        return None

    def stalled(self, now):
        """Why nothing gets through the broker's read loop now, or None."""
        age = self.round_trip_age(now)
        if age is not None and age > ROUND_TRIP_BOUND_S:
            return "no write of this broker came back through its read loop for %.0f s (over %g s)" % (
                age, ROUND_TRIP_BOUND_S)
        return None

    FIGURES = (
        Figure("loop_lag_s", lambda liveness: round(liveness.lag_s, 3),
               Metric("loop_lag_seconds", GAUGE, "How late the event loop's last tick ran (every %g s)" % TICK_S)),
        Figure("round_trip_age_s", lambda liveness: _rounded(liveness.round_trip_age(liveness.ticked_at)),
               Metric("round_trip_age_seconds", GAUGE, "Seconds since this broker's own write to Redis "
                      "last came back through its read loop (a cluster's)")),
    )


def _rounded(seconds):
    return None if seconds is None else round(seconds, 3)
