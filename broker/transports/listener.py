"""Taking connections in: the accept loop, refusals, and the end of every connection.

Rules this module keeps:

* The broker accepts connections itself, not through Tornado's accept
  handler, and hands each admitted one to the HTTP server as a stream
  (``HTTPServer.handle_stream``), unless the router's sends take it first
  (:attr:`Listener.first_send`: a plain connection whose first request is a
  send, or not there yet). Every accepted connection is admitted by
  :class:`broker.core.limits.Limits` before anything is read from it, or refused at
  once with a complete 503 response (:mod:`broker.transports.refusals`; over
  TLS, none: the connection has no TLS session yet).
* New connections are taken from the kernel as fast as they come
  (``ACCEPTS_PER_EVENT`` a readiness event, so none waits in a full backlog).
  Under admission control (an accept rate) they are handed to the HTTP
  server at most ``SERVED_PER_TURN`` a loop turn, in the order they came: a
  new connection's first request (a handshake, a session's opening) is
  served in the turn after its hand-over, so a burst of them shares each
  turn with the connected clients' messages. Without, each is handed over
  at once: a deploy's reconnects are served as fast as the loop can.
* When accept() fails for any reason but "nothing left to accept" or "that
  connection was aborted" (at the file limit: EMFILE, ENFILE), the listener
  stops accepting for ``ACCEPT_PAUSE`` seconds and logs one line: no spinning
  on a listening socket that stays readable, no log line per pass. Clients
  that arrive meanwhile wait in the kernel's backlog.
* An admitted connection is released when its socket closes, whoever closes
  it: :class:`CountedStream` overrides ``close_fd``, the one place every
  IOStream's descriptor ends, and a websocket, which takes the socket over
  and closes it itself, calls the stream's ``release_function()``. One
  that fails before it is a stream (a client that resets it before its TLS
  wrap) is closed and released on the spot, counted as a failed handshake
  (:class:`broker.transports.tls.HandshakeFailures`) and logged at debug
  level only, like Tornado's failed handshakes.
* Every admitted connection's kernel send buffer is ``send_buffer`` bytes
  (0: the kernel's autotuning), so a client that stops reading soon leaves
  its bytes waiting in the broker, where ``--max-buffer`` and
  ``--write-timeout`` see them, not megabytes of them in the kernel.
* Request headers over Tornado's ``max_header_size`` are answered 431 as the
  connection closes, rather than by a bare close.
* Every connection is timed (:mod:`broker.transports.request_timeouts`): a
  request's head and body as it is read, what Tornado writes on it as it
  falls behind.
* The client of a connection is its peer address, or, behind a proxy and only
  when configured, the address the proxy puts in a header of each request
  (:mod:`broker.transports.client_address`, and :class:`Handover` for the
  requests a protocol that took the connection over reads itself).
* A connection a protocol has taken over (:meth:`_Counted.hand_over`) may be
  given back, unread, and is then served again as a new stream of its client.
"""

import collections
import functools
import logging
import socket
import ssl
from typing import NamedTuple, Optional

from tornado.ioloop import IOLoop
from tornado.iostream import IOStream, SSLIOStream, UnsatisfiableReadError

from broker import _internals
from broker.core.limits import client_key
from broker.transports import tls
from broker.transports.client_address import named_client
from broker.transports.refusals import HEADERS_TOO_LARGE, REFUSAL_RESPONSES, refuse

LOG = logging.getLogger("broker.transports.listener")

ACCEPT_PAUSE = 1.0
# As Tornado does: at most this many accepts per readiness event. Fewer leave a deploy's
# reconnects in the kernel's backlog, which overflows: with 16, a rolling restart of 15,000
# clients had thousands of reconnects time out (BENCHMARKS.rst, "Hostile clients").
ACCEPTS_PER_EVENT = 128
# New connections served a loop turn under an accept rate. A connected client's round trip
# spans a few turns, each carrying this many openings of about 0.5 ms (CPython): with 128
# at once, a burst of 5,000 in a second held the connected clients' p99 at 165 ms, with 16
# at 22 to 38 ms, with 2 at 3.6 to 6.2 ms, with 1 at 3.0 and 3.3 ms (quiet: 1.1 to 1.3), the
# burst answered as soon each time. Not without a rate: 16 a turn left thousands of a
# rolling restart's reconnects timing out, the loop's turns long with the room's traffic.
SERVED_PER_TURN = 1
class Peer(NamedTuple):
    """The other end of an accepted connection, read once, as it is accepted."""

    address: tuple
    """Its socket address, as ``accept()`` gives it."""
    client: Optional[str]
    """The client its address names (:func:`broker.core.limits.client_key`)."""
    is_proxy: bool = False
    """Whether it is a trusted proxy, whose requests name their client."""


class _Counted:
    """The stream of an admitted connection from ``peer`` (a :class:`Peer`):
    released from ``limits`` when its socket closes, with the client it
    belongs to then (``client``). When Tornado closes it because a request's
    headers are over its limit, the close is preceded by a 431. Its requests
    are timed by ``timeouts`` (a :class:`RequestTimeouts`), if given. A
    protocol may take its socket over and give it back to the ``listener``
    (:meth:`hand_over`). ``head_deadline``: when its first request's head is
    due, if a kept connection gave it back with a deadline of its own."""

    head_deadline = None

    def __init__(self, connection, limits, client, peer, timeouts=None, listener=None, **kwargs):
        self.limits = limits
        self.client = client
        self.peer = peer
        self.timeouts = timeouts
        self.listener = listener
        self.reading_headers = False
        super().__init__(connection, **kwargs)

    # A read is timed once it has started: Tornado's HTTP server starts one on a stream
    # the client has just closed, and a closed stream raises StreamClosedError, leaving
    # its read pending for ever. Timed, it would be held until its deadline.
    def read_until_regex(self, regex, max_bytes=None):
        # Tornado's HTTP server reads request headers, and only them, this way.
        self.reading_headers = True  # a 431 may be due before this returns: see close_fd
        future = super().read_until_regex(regex, max_bytes)
        # Headers found in the buffer: the body may be read before the callback runs, and
        # a line of it over its limit must not be answered as headers too large.
        self.reading_headers = not future.done()
        if self.timeouts is not None and not self.closed():
            self.timeouts.reading_headers(self, self.head_deadline)
        self.head_deadline = None
        future.add_done_callback(self.headers_read)
        return future

    def headers_read(self, future):
        self.reading_headers = False
        if self.timeouts is not None:
            self.timeouts.headers_read(self)

    # Tornado reads a request's body, and only it, with these two.
    def read_bytes(self, num_bytes, partial=False):
        future = super().read_bytes(num_bytes, partial)
        self._reading_body()
        return future

    def read_until(self, delimiter, max_bytes=None):
        future = super().read_until(delimiter, max_bytes)
        self._reading_body()
        return future

    def _reading_body(self):
        if self.timeouts is not None and not self.closed():
            self.timeouts.reading_body(self)

    # Tornado writes every response, and a websocket's and a stream's head, with this.
    def write(self, data):
        caught_up = not self.writing()
        future = super().write(data)
        if caught_up and self.timeouts is not None and self.writing():
            self.timeouts.falling_behind(self)
        return future

    def close_fd(self):
        if self.reading_headers and isinstance(self.error, UnsatisfiableReadError):
            try:
                self.socket.send(HEADERS_TOO_LARGE)
            except OSError:
                pass
        super().close_fd()
        if self.timeouts is not None:
            self.timeouts.forget(self)
        self.limits.release(self.client)

    def release_function(self):
        """What releases this connection from ``limits``, for a protocol that
        takes the socket over and closes it itself (a websocket); it holds
        nothing of the stream."""
        return functools.partial(self.limits.release, self.client)

    def hand_over(self):
        """A :class:`Handover` for a protocol that takes over this stream's socket
        (plain HTTP) and answers some of its next requests itself; None if the
        stream has no listener to give it back to."""
        if self.listener is None or isinstance(self, SSLIOStream):
            return None
        if self.timeouts is not None:
            self.timeouts.forget(self)
        return Handover(self.listener, self.peer, self.client)


class Handover:
    """What a protocol that has taken a kept-alive connection's socket from
    its stream (:meth:`_Counted.hand_over`), or from the ``listener`` itself
    (:attr:`Listener.first_send`), needs of the ``listener``: the connection's
    ``client``, which a trusted proxy's requests change, its release, its way
    back to the HTTP server, and the request timeouts. ``client_header`` is
    the header (lower-case bytes) naming each request's client, from a
    trusted proxy; None otherwise."""

    __slots__ = ("client", "client_header", "timeouts", "_listener", "_peer")

    def __init__(self, listener, peer, client):
        self.client = client
        self.client_header = listener.proxies.header.lower().encode("latin-1") if peer.is_proxy else None
        self.timeouts = listener.timeouts
        self._listener = listener
        self._peer = peer

    def release(self):
        """The socket is closed."""
        self._listener.limits.release(self.client)

    def serve_again(self, sock, head_deadline):
        """Give the socket back, unread, to the HTTP server, as a new stream of
        the same client, to read its next request (and release it, once closed),
        whose head is due by ``head_deadline`` (a ``time.monotonic()`` time; None:
        within the header timeout of its first read)."""
        self._listener.serve_stream(sock, self._peer, self.client, head_deadline)

    def reassign(self, named):
        """A trusted proxy's request names its client ``named`` (the header's
        value, or None): the connection is that client's from now on, as
        :class:`ClientAddressCheck` has it. None; or, if the client is at its
        limit, the complete refusal to answer before closing (the connection
        then stays its old client's)."""
        client = named_client(named, self._peer.client)
        refusal = self._listener.limits.reassign(self.client, client)
        if refusal is not None:
            return REFUSAL_RESPONSES[refusal]
        self.client = client
        return None


class CountedStream(_Counted, IOStream):
    """An admitted connection in plain HTTP."""


class CountedTLSStream(_Counted, SSLIOStream):
    """An admitted connection over TLS (``--certfile``)."""


class Listener:
    """Accepts connections for ``server`` (a Tornado ``HTTPServer``) within
    ``limits``; ``add_sockets`` and ``stop`` as the server's own. A peer among
    ``proxies`` (:class:`broker.core.limits.TrustedProxies`, or None: no proxy)
    has no client before a request names it. With ``tls`` (an ``ssl.SSLContext``:
    :mod:`broker.transports.tls`) every connection is served over TLS, and a
    refused one is closed without an answer. With ``timeouts`` (a
    :class:`RequestTimeouts`) the listener times the requests instead of the
    server, from the first ``add_sockets`` on, also once it has stopped accepting.

    ``first_send``, when set, is offered every new plain connection before the
    HTTP server: a function of the socket and its :class:`Handover` that
    answers its first request itself, and takes the connection, or says False
    having read nothing (:func:`broker.transports.polling.answer_first_send`).

    ``handshake_failures``, when set (a :class:`broker.transports.tls.HandshakeFailures`),
    counts the TLS connections lost before their handshake could start.
    """

    first_send = None
    handshake_failures = None

    def __init__(self, server, limits, proxies=None, send_buffer=0, tls_context=None, timeouts=None):
        self.server = server
        self.limits = limits
        self.proxies = proxies
        self.send_buffer = send_buffer
        self.tls_context = tls_context
        self.timeouts = timeouts
        if timeouts is not None:
            _internals.untimed_requests(server)
        self.sockets = []
        self.watching = False
        self.resumption = None
        self.waiting = collections.deque()  # admitted, not yet served: (connection, peer, client)

    def add_sockets(self, sockets):
        self.watch(False)
        self.sockets.extend(sockets)
        self.watch(True)
        if self.timeouts is not None:
            self.timeouts.start()

    def stop(self):
        """Stop accepting and close the listening sockets; open connections go on."""
        self.watch(False)
        if self.resumption is not None:
            IOLoop.current().remove_timeout(self.resumption)
            self.resumption = None
        for sock in self.sockets:
            sock.close()
        self.sockets = []

    def watch(self, on):
        if on == self.watching:
            return
        loop = IOLoop.current()
        for sock in self.sockets:
            if on:
                loop.add_handler(sock, self.on_readable, IOLoop.READ)
            else:
                loop.remove_handler(sock)
        self.watching = on

    def on_readable(self, sock, events):
        for _ in range(ACCEPTS_PER_EVENT):
            try:
                connection, address = sock.accept()
            except BlockingIOError:
                return
            except ConnectionAbortedError:
                continue
            except OSError as error:
                self.pause(error)
                return
            self.take(connection, address)

    def pause(self, error):
        self.limits.accept_pauses += 1
        LOG.warning("not accepting connections for %gs: %s (%d open)",
                    ACCEPT_PAUSE, error.strerror or error, self.limits.open)
        self.watch(False)
        self.resumption = IOLoop.current().call_later(ACCEPT_PAUSE, self.resume)

    def resume(self):
        self.resumption = None
        self.watch(True)

    def take(self, connection, address):
        host = address[0]
        peer = Peer(address, client_key(host), self.proxies is not None and self.proxies.trusts(host))
        # A trusted proxy's connection has no client before a request names one.
        client = None if peer.is_proxy else peer.client
        refusal = self.limits.admit(client)
        if refusal is not None:
            refuse(connection, REFUSAL_RESPONSES[refusal] if self.tls_context is None else b"")
            return
        try:
            if self.send_buffer:
                connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
            if self.tls_context is not None:
                connection = tls.wrap(self.tls_context, connection)
        except OSError as error:  # ssl.SSLError too: the client reset it already
            self.lost(connection, client, error)
            return
        if self.limits.new_sessions is None:
            self.serve(connection, peer, client)
            return
        if not self.waiting:
            IOLoop.current().add_callback(self.serve_waiting)
        self.waiting.append((connection, peer, client))

    def lost(self, connection, client, error):
        """``connection``, admitted for ``client``, failed before it could be
        served (``error``): closed and released, counted, logged at debug level."""
        connection.close()
        self.limits.release(client)
        if self.handshake_failures is not None:
            self.handshake_failures.lost()
        LOG.debug("connection lost before it was served: %s", error)

    def serve_waiting(self):
        """Serve the connections taken first, ``SERVED_PER_TURN`` of them; the
        rest on the next turns."""
        waiting = self.waiting
        try:
            for _ in range(min(SERVED_PER_TURN, len(waiting))):
                self.serve(*waiting.popleft())
        finally:
            if waiting:
                IOLoop.current().add_callback(self.serve_waiting)

    def serve(self, connection, peer, client):
        """Serve ``connection`` (a socket, admitted for ``client``) from ``peer``
        (a :class:`Peer`): its first request answered by :attr:`first_send` if it
        takes it, else by the HTTP server."""
        if self.first_send is not None and not isinstance(connection, ssl.SSLSocket):
            if self.first_send(connection, Handover(self, peer, client)):
                return
        self.serve_stream(connection, peer, client)

    def serve_stream(self, connection, peer, client, head_deadline=None):
        """Have the HTTP server serve ``connection`` (a socket, admitted for
        ``client``) from ``peer`` (a :class:`Peer`), counted; over TLS if it is
        wrapped; its first request's head due by ``head_deadline``, if given."""
        kind = CountedTLSStream if isinstance(connection, ssl.SSLSocket) else CountedStream
        stream = kind(connection, self.limits, client, peer, self.timeouts, self,
                      max_buffer_size=self.server.max_buffer_size, read_chunk_size=self.server.read_chunk_size)
        stream.head_deadline = head_deadline
        self.server.handle_stream(stream, peer.address)
