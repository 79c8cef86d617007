"""Taking connections in: the accept loop, refusals, and the end of every connection.

Rules this module keeps:

* The broker accepts connections itself, not through Tornado's accept
  handler, and hands each admitted one to the HTTP server as a stream
  (``HTTPServer.handle_stream``). Every accepted connection is admitted by
  :class:`broker.core.limits.Limits` before anything is read from it, or refused at
  once: a complete 503 response is sent (over TLS, none: the connection has
  no TLS session yet), what the client already sent is read and dropped (so
  the close is a FIN, not a reset), and the socket is closed. A refusal
  holds its descriptor for one send, never longer.
* When accept() fails for any reason but "nothing left to accept" or "that
  connection was aborted" (at the file limit: EMFILE, ENFILE), the listener
  stops accepting for ``ACCEPT_PAUSE`` seconds and logs one line: no spinning
  on a listening socket that stays readable, no log line per pass. Clients
  that arrive meanwhile wait in the kernel's backlog.
* An admitted connection is released when its socket closes, whoever closes
  it: :class:`CountedStream` overrides ``close_fd``, the one place every
  IOStream's descriptor ends, and a websocket, which takes the socket over
  and closes it itself, calls the stream's ``release_function()``.
* Every admitted connection's kernel send buffer is ``send_buffer`` bytes
  (0: the kernel's autotuning), so a client that stops reading soon leaves
  its bytes waiting in the broker, where ``--max-buffer`` and
  ``--write-timeout`` see them, not megabytes of them in the kernel.
* Request headers over Tornado's ``max_header_size`` are answered 431 as the
  connection closes, rather than by a bare close.
* The client of a connection is its peer address, or, behind a proxy and only
  when configured, the address the proxy puts in a header of each request
  (:class:`ClientAddressCheck`): the last one of a list, which is the one the
  proxy added; earlier ones are the client's own word.
"""

import functools
import logging
import socket

from tornado import httputil
from tornado.ioloop import IOLoop
from tornado.iostream import IOStream, SSLIOStream, UnsatisfiableReadError

from broker.core.limits import MAX_CONNECTIONS, PER_IP, client_key
from broker.transports import tls

LOG = logging.getLogger("broker.transports.listener")

ACCEPT_PAUSE = 1.0
# As Tornado does: at most this many accepts per readiness event, so other
# work runs between batches.
ACCEPTS_PER_EVENT = 128
DRAIN_BYTES = 65536

REFUSALS = {
    MAX_CONNECTIONS: "The server is at its connection limit; try again later.\n",
    PER_IP: "Too many connections from your address.\n",
}


def http_response(status, reason, body):
    """A complete ``Connection: close`` response as bytes."""
    body = body.encode()
    return ("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            % (status, reason, len(body))).encode() + body


REFUSAL_RESPONSES = {why: http_response(503, "Service Unavailable", body) for why, body in REFUSALS.items()}
HEADERS_TOO_LARGE = http_response(431, "Request Header Fields Too Large", "Request headers too large.\n")


def refuse(connection, response):
    """Send ``response`` on a just-accepted socket and close it, without waiting."""
    try:
        connection.setblocking(False)
        connection.send(response)
        connection.recv(DRAIN_BYTES)
    except OSError:
        pass
    finally:
        connection.close()


class _Counted:
    """The stream of an admitted connection: released from ``limits`` when its
    socket closes, with the client it belongs to then (``client``); ``peer``
    is the client its peer address names, ``from_proxy`` whether that peer is a
    trusted proxy, whose requests name their client. When Tornado closes it because a
    request's headers are over its limit, the close is preceded by a 431."""

    def __init__(self, connection, limits, client, peer, from_proxy=False, **kwargs):
        self.limits = limits
        self.client = client
        self.peer = peer
        self.from_proxy = from_proxy
        self.reading_headers = False
        super().__init__(connection, **kwargs)

    def read_until_regex(self, regex, max_bytes=None):
        # Tornado's HTTP server reads request headers, and only them, this way.
        self.reading_headers = True
        future = super().read_until_regex(regex, max_bytes)
        future.add_done_callback(self.headers_read)
        return future

    def headers_read(self, future):
        self.reading_headers = False

    def close_fd(self):
        if self.reading_headers and isinstance(self.error, UnsatisfiableReadError):
            try:
                self.socket.send(HEADERS_TOO_LARGE)
            except OSError:
                pass
        super().close_fd()
        self.limits.release(self.client)

    def release_function(self):
        """What releases this connection from ``limits``, for a protocol that
        takes the socket over and closes it itself (a websocket); it holds
        nothing of the stream."""
        return functools.partial(self.limits.release, self.client)


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
    refused one is closed without an answer."""

    def __init__(self, server, limits, proxies=None, send_buffer=0, tls_context=None):
        self.server = server
        self.limits = limits
        self.proxies = proxies
        self.send_buffer = send_buffer
        self.tls_context = tls_context
        self.sockets = []
        self.watching = False
        self.resumption = None

    def add_sockets(self, sockets):
        self.watch(False)
        self.sockets.extend(sockets)
        self.watch(True)

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
        peer = client_key(address[0])
        from_proxy = self.proxies is not None and self.proxies.trusts(address[0])
        client = None if from_proxy else peer
        refusal = self.limits.admit(client)
        if refusal is not None:
            refuse(connection, REFUSAL_RESPONSES[refusal] if self.tls_context is None else b"")
            return
        if self.send_buffer:
            connection.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self.send_buffer)
        kind = CountedStream
        if self.tls_context is not None:
            connection = tls.wrap(self.tls_context, connection)
            kind = CountedTLSStream
        stream = kind(connection, self.limits, client, peer, from_proxy,
                      max_buffer_size=self.server.max_buffer_size,
                      read_chunk_size=self.server.read_chunk_size)
        self.server.handle_stream(stream, address)


class ClientAddressCheck(httputil.HTTPServerConnectionDelegate):
    """Behind a proxy: the client of each request from a trusted proxy is the
    address in its ``header`` (the peer's address when the header is missing or
    not an address), and of any other request its peer's address, whatever its
    headers say; a connection belongs to the client of its latest request, and a
    request whose client is at its limit is answered 503 and its connection
    closed. Wraps ``app``, the application's own delegate."""

    def __init__(self, app, limits, header):
        self.app = app
        self.limits = limits
        self.header = header

    def start_request(self, server_conn, request_conn):
        return CheckedRequest(self, server_conn, request_conn)

    def on_close(self, server_conn):
        self.app.on_close(server_conn)


class CheckedRequest(httputil.HTTPMessageDelegate):
    """One request through :class:`ClientAddressCheck`: refused, or passed on
    whole to the application."""

    def __init__(self, check, server_conn, request_conn):
        self.check = check
        self.server_conn = server_conn
        self.request_conn = request_conn
        self.inner = None

    def headers_received(self, start_line, headers):
        check = self.check
        stream = self.server_conn.stream
        if not stream.from_proxy:  # counted by its own address as it was accepted
            self.inner = check.app.start_request(self.server_conn, self.request_conn)
            return self.inner.headers_received(start_line, headers)
        named = headers.get(check.header)
        client = (named and client_key(named.rsplit(",", 1)[-1])) or stream.peer
        refusal = check.limits.reassign(stream.client, client)
        if refusal is not None:
            body = REFUSALS[refusal].encode()
            self.request_conn.write_headers(
                httputil.ResponseStartLine("HTTP/1.1", 503, "Service Unavailable"),
                httputil.HTTPHeaders({"Content-Type": "text/plain; charset=utf-8",
                                      "Content-Length": str(len(body)),
                                      "Cache-Control": "no-store", "Connection": "close"}),
                body)
            self.request_conn.finish()
            return None
        stream.client = client
        self.inner = check.app.start_request(self.server_conn, self.request_conn)
        return self.inner.headers_received(start_line, headers)

    def data_received(self, chunk):
        if self.inner is not None:
            return self.inner.data_received(chunk)
        return None

    def finish(self):
        if self.inner is not None:
            self.inner.finish()

    def on_connection_close(self):
        if self.inner is not None:
            self.inner.on_connection_close()
