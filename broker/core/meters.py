"""The room's meters: per-second rates of its counters, and its delivery latency in buckets.

Rules this module keeps: plain numbers only (``/stats`` and ``/metrics`` read
them at their own time, :mod:`broker.ops`); the time comes from the caller;
counting a batch costs one bisect, whatever its size.
"""

import bisect
import collections


class RateMeter:
    """Per-second rates of growing counters, over a sliding window of samples."""

    def __init__(self, window=10):
        self._samples = collections.deque(maxlen=window + 1)

    def sample(self, now, *counters):
        self._samples.append((now, counters))

    def rates(self):
        if len(self._samples) < 2:
            return None
        (t0, first), (t1, last) = self._samples[0], self._samples[-1]
        return tuple((b - a) / (t1 - t0) for a, b in zip(first, last))


class LatencyHistogram:
    """Counts of messages by latency in seconds, in fixed buckets: what a
    Prometheus histogram exposes, kept here as plain numbers.

    ``counts[i]`` is the messages of latency at most ``BOUNDS[i]`` and more
    than the bound before it; the last count is those over every bound.
    """

    BOUNDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

    def __init__(self):
        self.counts = [0] * (len(self.BOUNDS) + 1)
        self.sum = 0.0

    def observe(self, seconds, messages=1):
        """Count ``messages`` messages of latency ``seconds``."""
        self.counts[bisect.bisect_left(self.BOUNDS, seconds)] += messages
        self.sum += seconds * messages

    def cumulative(self):
        """``[(bound, messages at most that late), ...]``, ending with ``(inf, all)``."""
        total = 0
        buckets = []
        for bound, count in zip(self.BOUNDS + (float("inf"),), self.counts):
            total += count
            buckets.append((bound, total))
        return buckets
