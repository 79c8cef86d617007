"""How many lines the broker logs: a bounded rate for each kind of line.

A client chooses how often some lines are written (a 500 the protocol requires
for its broken send, a malformed request, a timed-out body); a client sending
thousands of those must not write thousands of lines, fill a disk or hide the
lines that matter. Rules this module keeps:

* A kind of line is its format string (a record's ``msg`` before its
  arguments): "500 POST /broadcast/... (1.2.3.4)" from every client is one
  kind. Each kind may write ``burst`` lines at once, then one every
  ``period / burst`` seconds (a :class:`broker.core.token_bucket.TokenBucket`);
  the lines over that are counted, not written.
* The next line of a kind that was held back says how many were, so nothing
  is dropped unseen.
* The kinds remembered are bounded (:data:`KINDS`): past that, the memory
  starts again, which at worst lets a burst more of each kind through.
* Time comes from ``clock``; the filter does no I/O of its own.
"""

import logging
import time

from broker.core.token_bucket import TokenBucket

# Lines of one kind written at once, and the seconds in which as many more may follow.
BURST = 10
PERIOD = 60.0
# Kinds of line remembered at most (the broker's own format strings are far fewer).
KINDS = 1000


class LineRate(logging.Filter):
    """A filter for a handler: every kind of line at most ``burst`` lines per ``period`` seconds."""

    def __init__(self, burst=BURST, period=PERIOD, clock=time.monotonic):
        super().__init__()
        self.burst = burst
        self.rate = burst / period
        self.clock = clock
        self._kinds = {}

    def filter(self, record):
        now = self.clock()
        name = record.msg if isinstance(record.msg, str) else type(record.msg).__name__
        kind = self._kinds.get(name)
        if kind is None:
            if len(self._kinds) >= KINDS:
                self._kinds.clear()
            kind = self._kinds[name] = [TokenBucket(self.rate, self.burst, now), 0, now]
        bucket, held, since = kind
        if not bucket.take(now):
            if not held:
                kind[2] = now
            kind[1] = held + 1
            return False
        if held:
            record.msg = "%s [%d more like this not logged in the last %.0f s]" % (
                record.getMessage(), held, now - since)
            record.args = None
            kind[1] = 0
        return True


def install(handlers):
    """One :class:`LineRate` on every handler of ``handlers``, shared."""
    line_rate = LineRate()
    for handler in handlers:
        handler.addFilter(line_rate)
