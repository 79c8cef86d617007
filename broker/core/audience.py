"""How many are watching: at this broker, in the whole room, and when to tell them.

Rules this module keeps:

* ``here`` is this broker's subscribers. The room's count is every broker's,
  as the cluster reports it (:mod:`broker.cluster.backplane`), or ``here``
  for a broker alone.
* While a cluster's count is unknown (Redis down, or not reported yet) the
  room's count is None: it is never guessed from ``here``, and nothing is
  announced.
* A broker's share is the room's count over the brokers reporting it: what a
  drain paces itself by (:mod:`broker.core.drain`). A broker alone has none.
* With an announcement period, the room's count goes to every client at most
  once a period (less ``EARLY_S``, the jitter of the broker's one-second
  ticks), and only when it changed, as the message
  ``{"audience": 12345}`` (the hub sends it: see :meth:`broker.core.hub.Hub.announce`).
* Nothing here touches a socket or a clock: the caller gives the time.
"""

from broker.core import figures
from broker.core.figures import GAUGE, Figure, Metric
from broker.protocol import frames

KEY = "audience"
# The broker looks once a second, and its ticks jitter: a period is met this early.
EARLY_S = 0.5


class Audience:
    """``here()``: this broker's count; ``room()``: the cluster's count or None, and
    ``brokers()``: how many brokers reported it, or None (both absent for a broker alone);
    ``every``: seconds between announcements (0: never)."""

    def __init__(self, here, room=None, every=0.0, brokers=None):
        self._here = here
        self._room = room
        self._brokers = brokers
        self.every = every
        self.announced = None
        self._announced_at = None

    def room_count(self):
        """Everybody watching the room, or None while a cluster's count is unknown."""
        return self._room() if self._room is not None else self._here()

    def share(self):
        """The room's count per broker of a cluster, or None: a broker alone, or unknown."""
        if self._room is None or self._brokers is None:
            return None
        room, brokers = self._room(), self._brokers()
        return room / brokers if room is not None and brokers else None

    def announcement(self, now):
        """The JSON text to announce at ``now``, or None: not due, unchanged, or unknown."""
        if not self.every or (self._announced_at is not None and now - self._announced_at < self.every - EARLY_S):
            return None
        count = self.room_count()
        if count is None or count == self.announced:
            return None
        self.announced, self._announced_at = count, now
        return frames.encode_message({KEY: count})

    def stats(self):
        """``here``, ``room`` (None while unknown), the period and the last count announced."""
        return figures.stats_of(self)

    FIGURES = (
        Figure("here", lambda audience: audience._here()),
        Figure("room", room_count, Metric("audience", GAUGE, "Clients watching the room at every broker (here "
                                          "alone without a cluster)")),
        Figure("announce_every_s", "every"),
        Figure("announced", "announced"),
    )
