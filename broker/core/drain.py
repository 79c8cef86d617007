"""Draining: a broker that is leaving sends its clients elsewhere, a few at a time.

A deploy restarts every broker in turn. Closing all of one broker's clients in
the same instant sends them all back at once, onto the brokers that remain (or
onto the restarted one before it is ready): a reconnect storm. Rules:

* Draining is asked for by SIGTERM, SIGINT or ``POST /admin/drain``
  (:meth:`Drain.request`); it starts at the first request and never stops.
* From that instant ``/healthz`` answers 503 "draining", so the proxy sends
  the broker no new sessions once its check has seen it. Until then, a request
  that would open a session, on any transport, is answered 503 before anything
  of the session is made (counted in :attr:`Drain.refused`), so the proxy asks
  another broker; a session that opens all the same (its request came in
  before the drain) is closed as it opens with ``RECONNECT``
  (:mod:`broker.protocol.close_codes`).
* The clients connected when the drain starts (:meth:`Drain.start`) are closed
  with ``RECONNECT``, spread evenly over ``seconds``: ``t`` seconds after
  the start, ``ceil(n * t / seconds)`` of them have been (:meth:`Drain.due`).
  Each is closed as every session closes: after what it is owed.
* At the end of the period, or at a second request, the rest are closed at
  once and the broker exits.

Nothing here touches a socket or a clock: the broker's run loop gives the
time and closes what :meth:`Drain.due` returns.
"""

import math


class Drain:
    """The drain of one broker over ``seconds``; ``wake`` (or None) is called at each request."""

    def __init__(self, seconds, wake=None):
        self.seconds = seconds
        self.wake = wake
        self.requests = 0
        self.refused = 0
        self._clients = []
        self._began = None
        self._closed_count = 0

    @property
    def draining(self):
        return self.requests > 0

    def request(self):
        """SIGTERM, SIGINT or ``POST /admin/drain``: the first starts the drain, a second ends it."""
        self.requests += 1
        if self.wake is not None:
            self.wake()

    def start(self, clients, now):
        """Schedule the closing of ``clients`` (the connected ones) from ``now``."""
        self._clients = list(clients)
        self._began = now
        self._closed_count = 0

    def due(self, now):
        """The clients to close at ``now``: those the even spread has reached and not closed yet."""
        total = len(self._clients)
        if self.seconds <= 0:
            target = total
        else:
            target = min(total, math.ceil(total * (now - self._began) / self.seconds))
        due = self._clients[self._closed_count:target]
        self._closed_count = max(self._closed_count, target)
        return due

    @property
    def done(self):
        return self._closed_count >= len(self._clients)

    def stats(self):
        """Whether the broker is draining, over how long, how many of the clients it had it has
        closed, and how many new sessions it has refused."""
        return {"draining": self.draining, "seconds": self.seconds, "closed": self._closed_count,
                "clients": len(self._clients), "refused": self.refused}
