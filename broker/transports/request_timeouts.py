"""The listener's timeouts: a request's head and body as they are read, and what Tornado writes.

Rules this module keeps:

* The header and body timeouts are the listener's (:class:`RequestTimeouts`),
  not Tornado's: Tornado starts a timer, a wrapping future and, for a body,
  a task for every request (6 to 10 % of a poll's CPU), where the listener
  notes a deadline in a dict and sweeps the dict a few times a second. Same
  rules: a connection's next request's headers must be complete within the
  header timeout from its opening or from the end of its previous response,
  a body within the body timeout from its first read; a connection over
  either is closed (a body's with a log line at INFO, as Tornado logs it).
  A request a kept connection gives back to the server, its head not yet
  whole (:meth:`broker.transports.listener.Handover.serve_again`), keeps the deadline it had there.
* What Tornado writes on a connection (a response: a connection's first
  poll, every poll over TLS, ``/info``, a websocket's or a stream's head) is
  held to ``--write-timeout``, as a backlog of messages on the broker's own
  sockets is (:mod:`broker.transports.owned_socket`): a stream whose write
  leaves bytes the kernel does not take must have taken them all within the
  write timeout, however slowly it reads, or it is closed
  (its deadline noted by the listener's counted stream as it falls behind). A write
  that goes out whole costs two looks at the stream's buffer.
"""

import logging
import time

from tornado.ioloop import PeriodicCallback

LOG = logging.getLogger("broker.transports.listener")


class RequestTimeouts:
    """The header, body and write timeouts of a listener's connections (see
    the module's rules), in seconds; ``write_timeout`` None leaves writes
    untimed. A stream's deadline is one entry of a dict in the order the
    deadlines fall (all of a dict have one timeout), so that :meth:`sweep`
    reads only the entries that are due, and one more. A head's deadline
    carried from a kept connection (``carried``) is earlier than that order:
    those few are read whole at each sweep."""

    def __init__(self, header_timeout, body_timeout, write_timeout=None):
        self.header_timeout = header_timeout
        self.body_timeout = body_timeout
        self.write_timeout = write_timeout
        self.headers = {}
        self.carried = {}
        self.bodies = {}
        self.writes = {}
        self.timer = None

    def reading_headers(self, stream, deadline=None):
        """``stream``'s next request's head is being read; by ``deadline``
        (a ``time.monotonic()`` time) if given, else within the header timeout."""
        self.headers.pop(stream, None)
        self.carried.pop(stream, None)
        self.bodies.pop(stream, None)
        if deadline is None:
            self.headers[stream] = time.monotonic() + self.header_timeout
        else:
            self.carried[stream] = deadline

    def deadline(self, stream):
        """The time by which ``stream``'s head is due, if it is being read."""
        return self.headers.get(stream, self.carried.get(stream))

    def headers_read(self, stream):
        self.headers.pop(stream, None)
        self.carried.pop(stream, None)

    def reading_body(self, stream):
        if stream not in self.bodies:
            self.bodies[stream] = time.monotonic() + self.body_timeout

    def falling_behind(self, stream):
        """``stream`` has just been left bytes to write, with none before: all
        it holds is due within the write timeout from now."""
        if self.write_timeout is not None:
            self.writes.pop(stream, None)  # caught up since its last deadline: a new one, in order
            self.writes[stream] = time.monotonic() + self.write_timeout

    def forget(self, stream):
        self.headers.pop(stream, None)
        self.carried.pop(stream, None)
        self.bodies.pop(stream, None)
        self.writes.pop(stream, None)

    def start(self):
        """Sweep four times within the shortest timeout, at most once a second."""
        if self.timer is None:
            timed = (self.header_timeout, self.body_timeout, self.write_timeout)
            period = min(1.0, min(timeout for timeout in timed if timeout is not None) / 4)
            self.timer = PeriodicCallback(self.sweep, 1000 * period)
            self.timer.start()

    def stop(self):
        if self.timer is not None:
            self.timer.stop()
            self.timer = None

    def sweep(self, now=None):
        """Close every stream past its deadline; a body's only while it is
        still being read (one read since the next request's headers forgets it),
        a write's only while it still has bytes to write (the stream may have
        caught up, or given its socket to a protocol, since)."""
        now = time.monotonic() if now is None else now
        for stream in _due(self.headers, now):
            stream.close()
        for stream in [stream for stream, deadline in self.carried.items() if deadline <= now]:
            del self.carried[stream]
            stream.close()
        for stream in _due(self.bodies, now):
            if stream.reading():
                LOG.info("timeout reading a request's body from %s", stream.peer.address[0])
                stream.close()
        for stream in _due(self.writes, now):
            if stream.writing():
                stream.close()


def _due(deadlines, now):
    """Take out of ``deadlines`` (a stream's deadline each, in the order they
    fall) the streams whose deadline is past ``now``."""
    due = []
    for stream, deadline in deadlines.items():
        if deadline > now:
            break
        due.append(stream)
    for stream in due:
        del deadlines[stream]
    return due
