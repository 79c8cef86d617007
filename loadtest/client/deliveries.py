"""What every load client connection keeps, whatever its transport: deliveries, round trips, its opening, its end.

Rules:

- A :class:`ClientConnection` drives one sans-I/O protocol: it counts the messages delivered
  (``received``; ``sampled``, what a listener group took of them), records the round trip of
  each of its own in ``histogram``, and settles ``opened`` with the protocol's first OPENED,
  or a :class:`loadtest.errors.ConnectError` if the protocol closes first.
- Times are microseconds of the monotonic clock (:func:`now_us`), the clock messages carry.
- A failed connection attempt is named, never traced (:func:`failure_reason`).
"""

import asyncio
import errno
import time

from loadtest.errors import ConnectError


def now_us():
    return int(time.monotonic() * 1e6)


def failure_reason(exc):
    """A short reason for a failed connection attempt, never a traceback."""
    if isinstance(exc, ConnectError):
        return exc.reason
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, OSError):
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return "too many open files"
        if exc.errno == errno.EADDRNOTAVAIL:
            return "no free local port (add --source-addresses)"
        if exc.errno in (errno.ECONNRESET, errno.EPIPE):
            return "reset by the server"
        return exc.strerror or str(exc)
    return "%s: %s" % (type(exc).__name__, exc)


class ClientConnection:
    """One load client's connection state; subclasses move the bytes. ``reopened``: streams reopened and
    polls after the first; ``on_end``: what to call with the reason, once, when it ends after it opened."""

    reopened = 0
    on_end = None

    def __init__(self, protocol, histogram):
        self.protocol = protocol
        self.histogram = histogram
        self.received = 0
        self.sampled = 0
        self.opened = asyncio.get_event_loop().create_future()

    @property
    def alive(self):
        return self.protocol.closed_reason is None

    @property
    def closed_reason(self):
        return self.protocol.closed_reason

    def _record(self, own):
        """Record the round trips of ``own`` (``(seq, sent_us)`` pairs), now back."""
        now = now_us()
        record = self.histogram.record_value
        for _, sent_us in own:
            record(max(1, now - sent_us))

    def _open(self):
        if not self.opened.done():
            self.opened.set_result(None)

    def _closed(self, reason):
        if not self.opened.done():
            self.opened.set_exception(ConnectError(reason))
            self.opened.exception()  # nobody may be waiting any more
        elif self.on_end is not None:
            on_end, self.on_end = self.on_end, None
            on_end(reason)
