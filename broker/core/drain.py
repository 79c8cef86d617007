"""Draining: a broker that is leaving sends its clients elsewhere, a few at a time.

A deploy restarts every broker in turn. Closing all of one broker's clients in
the same instant sends them all back at once, onto the brokers that remain (or
onto the restarted one before it is ready): a reconnect storm. Rules:

* Draining is asked for by SIGTERM, SIGINT or ``POST /admin/drain``
  (:meth:`Drain.request`); it starts at the first request and never stops.
  The endpoint takes the admin token (``--admin-token``) only, never the
  publish token: a backend that may publish may not stop brokers. Without
  an admin token it is disabled, and only a signal drains.
* From that instant ``/healthz`` answers 503 "draining", so the proxy sends
  the broker no new sessions once its check has seen it. Until then, a request
  that would open a session, on any transport, is answered 503 before anything
  of the session is made (counted in :attr:`Drain.refused`), so the proxy asks
  another broker; a session that opens all the same (its request came in
  before the drain) is closed as it opens with ``RECONNECT``
  (:mod:`broker.protocol.close_codes`).
* The clients connected when the drain starts (:meth:`Drain.start`) are closed
  with ``RECONNECT``, spread evenly over the drain's period: ``t`` seconds
  after the start, ``ceil(n * t / period)`` of them have been
  (:meth:`Drain.due`). Each is closed as every session closes: after what it
  is owed.
* The period is ``seconds``, unless the broker holds more than its share of a
  cluster's clients (the room's count over the brokers reporting it): then
  it closes them at the rate a broker holding its share would, ``share /
  seconds`` a second, over at most ``MAX_STRETCH`` times ``seconds``. A
  proxy sends a draining broker's clients to the broker with the fewest, and
  through a rolling restart the broker drained last holds up to half again
  its share or more: at its own count's rate, the broker taking its clients
  would take new sessions that much faster than any other drain sends them.
* At the end of the period, or at a second request, the rest are closed at
  once and the broker exits.

Nothing here touches a socket or a clock: the broker's run loop gives the
time and closes what :meth:`Drain.due` returns.
"""

import math

from broker.core import figures
from broker.core.figures import COUNTER, GAUGE, Figure, Metric

# A drain takes at most this many times ``seconds`` (see the rules); a service manager's stop
# timeout must leave room for it.
MAX_STRETCH = 2.0


class Drain:
    """The drain of one broker over ``seconds``; ``wake`` (or None) is called at each request."""

    def __init__(self, seconds, wake=None):
        self.seconds = seconds
        self.wake = wake
        self.requests = 0
        self.refused = 0
        self.period = seconds
        self._clients = []
        self._began = None
        self._closed_count = 0

    @property
    def draining(self):
        return self.requests > 0

    def request(self):
        """SIGTERM, SIGINT or ``POST /admin/drain`` (the admin token): the first starts the drain, a second ends it."""
        self.requests += 1
        if self.wake is not None:
            self.wake()

    def start(self, clients, now, share=None):
        """Schedule the closing of ``clients`` (the connected ones) from ``now``; ``share``: the
        clients per broker of the cluster, or None (a broker alone, or the count unknown)."""
        self._clients = list(clients)
        self._began = now
        self._closed_count = 0
        self.period = self.seconds
        if share and len(self._clients) > share:
            self.period = self.seconds * min(MAX_STRETCH, len(self._clients) / share)

    def due(self, now):
        """The clients to close at ``now``: those the even spread has reached and not closed yet."""
        total = len(self._clients)
        if self.period <= 0:
            target = total
        else:
            target = min(total, math.ceil(total * (now - self._began) / self.period))
        due = self._clients[self._closed_count:target]
        self._closed_count = max(self._closed_count, target)
        return due

    @property
    def done(self):
        return self._closed_count >= len(self._clients)

    def stats(self):
        """Whether the broker is draining, over how long (``seconds``, and the ``period`` of this
        drain), how many of the clients it had it has closed, and how many new sessions it has
        refused."""
        return figures.stats_of(self)

    FIGURES = (
        Figure("draining", "draining", Metric("draining", GAUGE, "1 while the broker drains its clients before "
                                               "it exits")),
        Figure("seconds", "seconds"),
        Figure("period", lambda drain: round(drain.period, 3)),
        Figure("closed", "_closed_count"),
        Figure("clients", lambda drain: len(drain._clients)),
        Figure("refused", "refused", Metric("drain_refusals", COUNTER, "Requests that would have opened a session "
                                            "while draining, answered 503 for a proxy to ask another broker")),
    )
