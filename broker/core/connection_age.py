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
* Connections wait in buckets, one per second of their moment
  (:class:`broker.core.deadlines.Deadlines`): adding one, discarding one and
  finding those due cost the same however many are open, and the memory
  follows the open connections, not all those ever opened.
* A connection closed for its age is counted (:attr:`AgeLimit.closed`).

Nothing here touches a socket or a clock: the broker's run loop gives the time
and closes what :meth:`AgeLimit.due` returns.
"""

import random

from broker.core import figures
from broker.core.deadlines import Deadlines
from broker.core.figures import COUNTER, Figure, Metric

JITTER = 0.1


class AgeLimit:
    """Connections closed after ``seconds`` (plus or minus ``JITTER``), drawn with ``draw()`` in [0, 1)."""

    def __init__(self, seconds, draw=random.random):
        self.seconds = seconds
        self.closed = 0
        self._draw = draw
        self._moments = Deadlines()

    def __len__(self):
        return len(self._moments)

    def add(self, connection, now):
        """Close ``connection``, opened at ``now``, once it is old enough."""
        self._moments.add(connection, now + self.seconds * (1 - JITTER + 2 * JITTER * self._draw()))

    def discard(self, connection):
        """Forget ``connection`` (it closed); unknown connections are ignored."""
        self._moments.discard(connection)

    def due(self, now):
        """The connections old enough at ``now``, each returned once and counted as closed."""
        due = self._moments.due(now)
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
