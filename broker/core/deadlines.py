"""Things each due at a moment, found once a second however many wait: a connection's age
(:mod:`broker.core.connection_age`), a session's token's ``exp`` or the wait for its first
token (:mod:`broker.core.session_tokens`).

Rules this module keeps:

* Things wait in buckets, one per second: a thing due at a moment is in the bucket of the
  second that moment rounds up to, so it is found at that second, never before its moment
  and at most a second after it (plus the caller's own period).
* Adding, moving (adding again: the new moment replaces the old), discarding and finding
  those due cost the same however many wait, and the memory follows those waiting, not all
  those ever added. Finding them walks the seconds since the last look, one by one, from the
  earliest bucket held; with none held it costs nothing.
* Each thing due is returned once, and forgotten: a thing is in one bucket at most.
* Nothing here reads a clock: the caller gives the moments and the time, on the clock of its
  choice (monotonic, or the epoch's for a token's ``exp``), the same for one set of deadlines.
"""

import math


class Deadlines:
    """Things (hashable) each due at its moment (seconds, on the caller's clock)."""

    def __init__(self):
        self._buckets = {}
        self._bucket_of = {}
        self._next = None

    def __len__(self):
        return len(self._bucket_of)

    def __iter__(self):
        """Every thing waiting, in no order."""
        return iter(list(self._bucket_of))

    def add(self, thing, moment):
        """``thing`` is due at ``moment`` (instead of when it was, if it was waiting)."""
        self.discard(thing)
        second = math.ceil(moment)
        self._buckets.setdefault(second, set()).add(thing)
        self._bucket_of[thing] = second
        if self._next is None or second < self._next:
            self._next = second

    def discard(self, thing):
        """Forget ``thing``; one not waiting is ignored."""
        second = self._bucket_of.pop(thing, None)
        if second is None:
            return
        bucket = self._buckets[second]
        bucket.discard(thing)
        if not bucket:
            del self._buckets[second]
            if not self._buckets:
                self._next = None

    def due(self, now):
        """The things due at ``now`` (their moment is past), each returned once and forgotten."""
        due = []
        while self._next is not None and self._next <= now:
            for thing in self._buckets.pop(self._next, ()):
                del self._bucket_of[thing]
                due.append(thing)
            self._next = self._next + 1 if self._buckets else None
        return due
