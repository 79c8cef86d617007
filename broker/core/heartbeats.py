"""One timer pings every websocket: a wheel of buckets, one visited per tick;
another sends every SockJS session its heartbeat frame.

Tornado's own pings (``websocket_ping_interval``) run one task per websocket,
which sleeps on a new timer and future for every ping: tracked objects for
every connection, replaced every interval, that outlive the collector's young
generations and pile up where a full collection walks them (see
:mod:`broker.ops.gc_policy`), and memory per connection. Here one periodic timer does the same for all of them. sockjs-tornado's
heartbeat is the same story (a timer object per session and a new timer handle,
partial and context every 25 s), so a :class:`HeartbeatWheel` sends SockJS sessions theirs while a
websocket or a request of theirs is attached (see
:class:`broker.transports.session.BrokerSession`).

Rules this module keeps:

* A websocket joins the bucket visited last, so its first ping comes one
  ``interval`` after it opened, as with Tornado; the wheel turns one bucket
  per tick of ``interval / buckets`` seconds, so every websocket is pinged
  once per ``interval``, and one tick pings ``1 / buckets`` of them (a few
  milliseconds, never one long sweep).
* A websocket that has not answered its ping when the wheel reaches the
  bucket ``timeout`` after it (rounded up to whole ticks, at most one
  interval) is told it timed out; one that answered is left alone. The check
  comes before the next ping of the same bucket.
* The wheel holds each member from ``add`` to ``discard``; members are
  objects with ``ping_due()`` and ``ping_timed_out()`` and a boolean
  ``awaiting_pong`` that ``ping_due()`` sets and the pong clears; a
  :class:`HeartbeatWheel`'s (sessions) have ``heartbeat_due()`` and are
  never timed out.

No sockets and no timer here: ``tick()`` is called by the owner's timer.
"""

import math

DEFAULT_BUCKETS = 25


class PingWheel:
    """Pings the members of one bucket per ``tick()``; see the module's rules."""

    def __init__(self, interval, timeout, buckets=DEFAULT_BUCKETS):
        self.buckets = [dict() for _ in range(buckets)]
        self.tick_seconds = interval / buckets
        self.check_after = max(1, min(buckets, math.ceil(timeout / self.tick_seconds - 1e-9))) if timeout else 0
        self.ticks = 0
        self.where = {}
        self.timed_out = 0

    def __len__(self):
        return len(self.where)

    def add(self, member):
        index = (self.ticks - 1) % len(self.buckets)
        self.buckets[index][member] = None
        self.where[member] = index

    def discard(self, member):
        index = self.where.pop(member, None)
        if index is not None:
            del self.buckets[index][member]

    def tick(self):
        count = len(self.buckets)
        if self.check_after:
            for member in list(self.buckets[(self.ticks - self.check_after) % count]):
                if member.awaiting_pong:
                    self.timed_out += 1
                    self.discard(member)
                    member.ping_timed_out()
        for member in list(self.buckets[self.ticks % count]):
            self._due(member)
        self.ticks += 1

    @staticmethod
    def _due(member):
        member.ping_due()


class HeartbeatWheel(PingWheel):
    """Calls every member's ``heartbeat_due()`` once per ``interval``, the first
    one ``interval`` after it joined; no answer is awaited."""

    def __init__(self, interval, buckets=DEFAULT_BUCKETS):
        super().__init__(interval, 0, buckets)

    @staticmethod
    def _due(member):
        member.heartbeat_due()
