"""``--max-connection-age``: old connections are sent elsewhere, so processes added later get their share.

A client keeps its connection for hours. Add a broker behind the proxy and it
gets only the clients that connect from then on; restart one and it gets only
the storm of the others' leftovers. A connection that reaches its age is
closed with ``RECONNECT`` (:mod:`broker.protocol.close_codes`), and its client
comes back through the proxy, to whichever broker it picks. Rules:

* Off unless a limit is given.
* Each connection's moment is drawn as it is added: the limit, plus or minus
  ``JITTER`` of it. Connections opened together (a reconnect storm, a deploy)
  leave spread over a fifth of the limit, never together.
* Connections wait in buckets, one per second of their moment: adding one,
  discarding one and finding those due cost the same however many are open,
  and the memory follows the open connections, not all those ever opened.
* A connection closed for its age is counted (:attr:`AgeLimit.closed`).

Nothing here touches a socket or a clock: the broker's run loop gives the time
and closes what :meth:`AgeLimit.due` returns.
"""

import math
import random

from broker.core import figures
from broker.core.figures import COUNTER, Figure, Metric

JITTER = 0.1


class AgeLimit:
    """Connections closed after ``seconds`` (plus or minus ``JITTER``), drawn with ``draw()`` in [0, 1)."""

    def __init__(self, seconds, draw=random.random):
        self.seconds = seconds
        self.closed = 0
        self._draw = draw
        self._buckets = {}
        self._bucket_of = {}
        self._next = None

    def __len__(self):
        return len(self._bucket_of)

    def add(self, connection, now):
        """Close ``connection``, opened at ``now``, once it is old enough."""
        moment = now + self.seconds * (1 - JITTER + 2 * JITTER * self._draw())
        second = math.ceil(moment)
        self._buckets.setdefault(second, set()).add(connection)
        self._bucket_of[connection] = second
        if self._next is None or second < self._next:
            self._next = second

    def discard(self, connection):
        """Forget ``connection`` (it closed); unknown connections are ignored."""
        second = self._bucket_of.pop(connection, None)
        if second is None:
            return
        bucket = self._buckets[second]
        bucket.discard(connection)
        if not bucket:
            del self._buckets[second]

    def due(self, now):
        """The connections old enough at ``now``, each returned once and counted as closed."""
        due = []
        while self._next is not None and self._next <= now:
            for connection in self._buckets.pop(self._next, ()):
                del self._bucket_of[connection]
                due.append(connection)
            self._next = self._next + 1 if self._buckets else None
        self.closed += len(due)
        return due

    def stats(self):
        """The limit, the connections waiting for it, and how many it has closed."""
        return figures.stats_of(self)

    FIGURES = (
        Figure("seconds", "seconds"),
        Figure("connections", len),
        Figure("closed", "closed", Metric("connection_age_closes", COUNTER, "Connections closed for reaching "
                                          "--max-connection-age")),
    )
