"""The one module that touches private names of Tornado, sockjs-tornado and redis-py.

Rules this module keeps:

* No other module of the broker names a private attribute or method of these
  libraries, nor overrides one (``tests/unit/broker/test_internals.py`` checks every
  module against Tornado's and sockjs-tornado's classes, and those that import
  redis-py against its own).
* Each private name is used behind a function or mixin named for what it
  does; a test drives each one on real library objects and fails with the
  name an upgrade removed.
* Public API is used wherever it does the job; what is here has none
  (Tornado 6.4 to 6.6, sockjs-tornado 1.0.7, redis-py 6.2 to 6.4).
"""

import ssl

from tornado.ioloop import IOLoop


def take_socket(stream):
    """The socket of ``stream`` (a Tornado IOStream whose HTTP connection has
    been detached, with nothing left to write), and the bytes it had read
    from it and not handed out (over TLS, with those TLS had decrypted). The event loop stops watching the socket for
    the stream, which must not be used again; closing the socket is the
    caller's."""
    buffered = bytes(stream._read_buffer[:stream._read_buffer_size])
    IOLoop.current().remove_handler(stream.socket.fileno())
    sock = stream.socket
    if isinstance(sock, ssl.SSLSocket) and sock.pending():
        buffered += sock.recv(sock.pending())  # decrypted already: no readable event will tell
    return sock, buffered


def read_ahead(stream):
    """How many bytes ``stream`` (a Tornado IOStream) has read from its socket
    and not handed out yet: a pipelined request's, after the one being answered."""
    return stream._read_buffer_size


# What Tornado logs, at warning level, for each TLS handshake that fails (SSLIOStream._do_ssl_handshake).
TLS_HANDSHAKE_FAILURE = "SSL Error on %s %s: %s"


def is_tls_handshake_failure(record):
    """Whether the log ``record`` is Tornado's line for a failed TLS handshake."""
    return record.msg == TLS_HANDSHAKE_FAILURE


def close_after_response(request):
    """Have the response to ``request`` end its connection, even if the
    client asked for keep-alive: Tornado then sends ``Connection: close`` to
    an HTTP/1.1 client, and closes the connection once the response is
    finished."""
    request.connection._disconnect_on_finish = True


def unchunked_response(request):
    """Have Tornado send the response to ``request`` unchunked, its body ending with its
    connection, whatever HTTP version the client speaks: as it answers an HTTP/1.0 client
    that did not ask for keep-alive (to HTTP/1.1 it chunks every body of unknown length).
    The response's ``Connection: close`` is the caller's to set."""
    connection = request.connection
    connection._request_start_line = connection._request_start_line._replace(version="HTTP/1.0")
    connection._disconnect_on_finish = True
    request.headers["Connection"] = "close"


def untimed_requests(server):
    """Have ``server`` (a Tornado HTTPServer) read its requests' headers and
    bodies without timing them, whatever it was built with: the caller times
    them instead. (Tornado wraps each read in ``gen.with_timeout`` when its
    connection parameters name a timeout, and always names a header timeout.)"""
    server.conn_params.header_timeout = None
    server.conn_params.body_timeout = None


def abort_redis_connections(pool):
    """Close the socket of every connection of ``pool`` (a ``redis.asyncio``
    ConnectionPool) at once, dropping what its transport still holds to write:
    what waits on the connections fails. redis-py's own close flushes first,
    which takes as long as the server takes to read again."""
    for connection in (*pool._available_connections, *pool._in_use_connections):
        if connection._writer is not None:
            connection._writer.transport.abort()


def stop_router_timers(router):
    """Stop the two timers a sockjs-tornado ``SockJSRouter`` starts as it is built (its
    sessions' expiry and its statistics), which would otherwise run, and keep the router's
    parts, as long as the event loop, even once nothing else holds the router."""
    router._sessions_cleanup.stop()
    router.stats._callback.stop()


def pypy_nursery_bytes():
    """The size of PyPy's nursery, in bytes: ``gc.get_stats()`` gives it only
    formatted for reading ("4.0MB"), its private ``_s`` as the number."""
    import gc

    return gc.get_stats()._s.nursery_size
