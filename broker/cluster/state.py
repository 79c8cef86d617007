"""The backplane's bookkeeping, without its I/O: state, stream ids, backoff.

Rules kept here (the Redis I/O in :mod:`broker.cluster.backplane` follows them):

* The backplane is ``connecting`` until its first successful command, ``up``
  while Redis answers, ``down`` (with the reason) from the first failure until
  a command succeeds again; each return to ``up`` after ``down`` counts as a
  reconnect. (What the read loop does meanwhile is :mod:`broker.cluster.lifecycle`'s.)
* While it is not up, a message offered to it is refused with
  :class:`RelayUnavailable` and counted; nothing is queued for later.
* ``last_id`` is the id of the newest stream entry delivered; reading resumes
  after it, so an entry is delivered at most once and, while Redis keeps it,
  at least once. Ids only grow.
* A read asks too whether the stream still holds ``last_id``. When it
  does not, the stream lost it, and
  :meth:`BackplaneState.missing` judges why: the stream holds entries older
  than it, so it was never in this stream (``failover``: the primary that
  took over, or a Redis restarted from its disk, did not have what this
  broker delivered); or it was trimmed, and entries after it too before
  this broker read them (``trimmed``: its clients missed them), which the
  position tells (after an outage, with the position unknown, any trim
  past ``last_id`` is taken as one). The backplane tells its clients a gap
  for either (:mod:`broker.cluster.backplane`, as :mod:`broker.cluster.lifecycle`
  says), and counts it here.
* ``position`` is how many entries the stream had ever been given up to
  ``last_id`` (Redis's ``entries-added``): known once the stream's tail was
  loaded, kept by counting what is delivered, and unknown again after an
  outage (Redis may have come back with another history), but for a broker
  that has delivered nothing yet: every entry the stream ever held is after
  its :data:`BEGINNING`, so a new entry read after the outage is no loss. Brokers only
  append, so the stream holds the last ``length`` of ``entries-added``; with
  the position known, a ``trimmed`` loss counts the entries never read in
  ``trimmed_unread``.
* Retries wait 0.05 s, doubling up to 2 s, the same on every broker
  (deterministic; a handful of brokers need no jitter); the first success
  resets the wait.
"""

import collections

from broker.cluster.lifecycle import LifecycleEvent
from broker.core.seams import RelayUnavailable

CONNECTING = "connecting"
UP = "up"
DOWN = "down"
# The id before every entry: where a broker that has delivered nothing reads from.
BEGINNING = "0-0"
# The greatest sequence number of a stream id.
_LAST_SEQUENCE = 2 ** 64 - 1


def stream_id(text):
    """A Redis stream id (``"1700000000000-3"``, str or bytes) as a comparable pair."""
    if isinstance(text, bytes):
        text = text.decode("ascii")
    ms, _, seq = text.partition("-")
    return int(ms), int(seq or 0)


def before(text):
    """The stream id just before ``text``; ``"0-0"`` for itself (where a history starts, after it)."""
    ms, seq = stream_id(text)
    if seq:
        return "%d-%d" % (ms, seq - 1)
    return "%d-%d" % (ms - 1, _LAST_SEQUENCE) if ms else "0-0"


class Backoff:
    """Waits between reconnect attempts: ``first`` seconds, doubling up to ``cap``."""

    def __init__(self, first=0.05, cap=2.0):
        self.first = first
        self.cap = cap
        self._next = first

    def next(self):
        """The wait before the next attempt."""
        wait = self._next
        self._next = min(self._next * 2, self.cap)
        return wait

    def reset(self):
        self._next = self.first


class BackplaneState:
    """What the backplane knows of itself, as plain data for ``/stats`` and metrics.

    ``clock`` is wall-clock milliseconds (stream ids carry Redis's wall clock):
    ``lag_ms`` is how old the newest delivered entry was when it was delivered.
    """

    def __init__(self, key, clock_ms):
        self.key = key
        self._clock_ms = clock_ms
        self.state = CONNECTING
        self.reason = "connecting to Redis"
        self.last_id = None
        self.position = None
        self.trimmed_unread = 0
        self.losses = collections.Counter()
        self.memory = None
        self.refusal = None
        self.lag_ms = None
        self.reconnects = 0
        self.read_restarts = 0
        self.refused = 0
        self.published = 0
        self.delivered = 0

    @property
    def is_up(self):
        return self.state == UP

    @property
    def unavailable(self):
        """Why the backplane cannot publish, or None: it is not up, or Redis refuses writes
        (for memory, or another reason)."""
        return self.reason if self.state != UP else self.memory or self.refusal

    def came_up(self):
        """A command succeeded: returns True if this ends an outage or the first connect."""
        if self.state == UP:
            return False
        if self.state == DOWN:
            self.reconnects += 1
            if self.last_id != BEGINNING:
                self.position = None
        self.state = UP
        self.reason = None
        return True

    def went_down(self, reason):
        """A command failed: returns True if this starts an outage."""
        started = self.state != DOWN
        self.state = DOWN
        self.reason = reason
        return started

    def refuse(self, count=1, reason=None):
        """Count ``count`` messages refused, and return the :class:`RelayUnavailable` to raise;
        ``reason``: why their write failed (the backplane may still be up)."""
        self.refused += count
        if reason is not None:
            return RelayUnavailable("the cluster backplane could not publish: %s" % reason)
        return RelayUnavailable("the cluster backplane is %s: %s" % (self.state, self.reason))

    def read(self, last_id, position):
        """Entries up to ``last_id``, the stream's ``position``-th, were read without delivery (the tail)."""
        self.last_id = last_id
        self.position = position

    def missing(self, first, added, length):
        """``last_id`` did not come back first from a read: whether its clients
        missed anything (None), and why (:attr:`LifecycleEvent.TRIMMED`, :attr:`LifecycleEvent.FAILOVER`),
        given the stream's first entry's id, ``entries-added`` and ``length``
        (see the module's rules)."""
        if stream_id(first) < stream_id(self.last_id):
            why = LifecycleEvent.FAILOVER  # a trim takes the oldest: the stream would not hold older entries
        elif self.position is None:
            why = LifecycleEvent.TRIMMED  # after an outage: how many cannot be told
        else:
            lost = added - length - self.position
            if lost <= 0:
                return None
            self.trimmed_unread += lost
            why = LifecycleEvent.TRIMMED
        self.losses[why] += 1
        return why

    def read_through(self, first_id, last_id, count):
        """``count`` entries from ``first_id`` through ``last_id`` were read, and go to the hub:
        returns the age of the first in seconds (when it was added to the stream)."""
        now_ms = self._clock_ms()
        self.last_id = last_id
        self.delivered += count
        if self.position is not None:
            self.position += count
        self.lag_ms = max(0, now_ms - stream_id(last_id)[0])
        return max(0, now_ms - stream_id(first_id)[0]) / 1000

    def stats(self):
        return {
            "state": self.state,
            "reason": self.unavailable,
            "stream": self.key,
            "last_id": self.last_id,
            "lag_ms": self.lag_ms,
            "reconnects": self.reconnects,
            "read_restarts": self.read_restarts,
            "trimmed_unread": self.trimmed_unread,
            "losses_trimmed": self.losses[LifecycleEvent.TRIMMED],
            "losses_failover": self.losses[LifecycleEvent.FAILOVER],
            "memory_full": self.memory is not None,
            "published": self.published,
            "delivered": self.delivered,
            "refused": self.refused,
        }
