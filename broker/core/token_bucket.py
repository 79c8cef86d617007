"""How many messages one client may publish, how many sessions may open: a token bucket.

Rules this module keeps:

* A bucket holds at most ``burst`` tokens and gains ``rate`` tokens a second;
  each message (or new session) takes one, and one that finds the bucket
  empty is refused. A client may so publish ``burst`` messages at once, then
  ``rate`` a second for ever; :meth:`TokenBucket.wait` says how long until
  the next token, for a refusal's ``Retry-After``.
* Time comes from the caller (``now``, in seconds, from any monotonic clock);
  no clock, no I/O here.
"""


class TokenBucket:
    __slots__ = ("rate", "burst", "tokens", "stamp")

    def __init__(self, rate, burst, now):
        self.rate = rate
        self.burst = burst
        self.tokens = burst
        self.stamp = now

    def take(self, now):
        """Take one token; False, taking nothing, when there is none."""
        tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        if tokens < 1:
            self.tokens = tokens
            return False
        self.tokens = tokens - 1
        return True

    def wait(self, now):
        """Seconds until there is a token to take (0.0: there is one now); takes nothing."""
        tokens = min(self.burst, self.tokens + (now - self.stamp) * self.rate)
        self.tokens = tokens
        self.stamp = now
        return 0.0 if tokens >= 1 else (1 - tokens) / self.rate
