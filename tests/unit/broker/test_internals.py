"""The private names of Tornado, sockjs-tornado and redis-py: all in
broker._internals, each still there in the installed libraries."""

import asyncio
import contextlib
import os
import re
import socket

import redis
import redis.asyncio
import sockjs.tornado
import tornado
import tornado.ioloop
import tornado.web
from sockjs.tornado import router, session
from sockjs.tornado import transports as sockjs_transports
from sockjs.tornado.transports import pollingbase
from tornado import http1connection, httputil, iostream, websocket

from broker import _internals

BROKER = os.path.dirname(_internals.__file__)


LIBRARY_CLASSES = (
    tornado.web.RequestHandler, tornado.web.Application, websocket.WebSocketHandler,
    websocket.WebSocketProtocol13, iostream.IOStream, http1connection.HTTP1Connection,
    httputil.HTTPServerRequest, router.SockJSRouter, session.BaseSession, session.Session,
    sockjs.tornado.SockJSConnection, pollingbase.PollingTransportBase,
) + tuple(value for value in vars(sockjs_transports).values() if isinstance(value, type))


REDIS_CLASSES = (redis.asyncio.Redis, redis.asyncio.client.Pipeline, redis.asyncio.ConnectionPool,
                 redis.asyncio.Connection)


def library_private_names(classes, packages):
    """Private names ``classes`` define, or set on ``self`` anywhere in the
    source of ``packages``."""
    names = {name for cls in classes for name in dir(cls)}
    for package in packages:
        for directory, _, files in os.walk(os.path.dirname(package.__file__)):
            for filename in files:
                if filename.endswith(".py"):
                    with open(os.path.join(directory, filename)) as f:
                        names.update(re.findall(r"self\.(_\w+)\s*[:=]", f.read()))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_other_broker_module_names_a_private_name_of_the_libraries():
    """Every module against Tornado and sockjs-tornado (the broker subclasses
    their classes); the modules that import redis-py against its own."""
    web = library_private_names(LIBRARY_CLASSES, (tornado, sockjs.tornado))
    redis_py = library_private_names(REDIS_CLASSES, (redis,))
    offenders = []
    modules = [os.path.join(directory, filename) for directory, _, files in os.walk(BROKER) for filename in files
               if filename.endswith(".py") and filename != "_internals.py"]
    assert len(modules) > 20, "the walk missed the broker's folders"
    for path in sorted(modules):
        with open(path) as f:
            source = f.read()
        private = web | redis_py if re.search(r"^import redis|^from redis", source, re.M) else web
        used = set(re.findall(r"\.(_\w+)", source)) | set(re.findall(r"def (_\w+)", source))
        offenders += ["%s: %s" % (os.path.relpath(path, BROKER), name) for name in sorted(used & private)]
    assert not offenders, "private library names outside broker/_internals.py: %s" % offenders


@contextlib.asynccontextmanager
async def stream_past_a_line(rest):
    """A stream that has read the line ``GET`` and not ``rest`` after it, and its socket."""
    left, right = socket.socketpair()
    try:
        stream = iostream.IOStream(left)
        right.sendall(b"GET\r\n" + rest)
        assert await stream.read_until(b"\r\n") == b"GET\r\n"
        yield stream, left
    finally:
        left.close()
        right.close()


def test_take_socket_hands_over_the_socket_and_what_was_read_ahead():
    async def upgrade():
        async with stream_past_a_line(b"frames") as (stream, left):
            sock, buffered = _internals.take_socket(stream)
            # The broker registers the socket with asyncio itself: nothing may watch it still.
            watched = asyncio.get_running_loop().remove_reader(sock.fileno())
            return sock is left, watched, buffered

    taken, watched, buffered = asyncio.run(upgrade())
    assert taken
    assert not watched, "the event loop still watches the socket for Tornado"
    assert buffered == b"frames", "BaseIOStream._read_buffer or _read_buffer_size changed"


def test_read_ahead_counts_what_a_stream_read_past_the_request_it_handed_out():
    async def read():
        async with stream_past_a_line(b"next") as (stream, _):
            return _internals.read_ahead(stream)

    assert asyncio.run(read()) == 4, "BaseIOStream._read_buffer_size changed"


def test_close_after_response_sets_what_tornado_reads():
    left, right = socket.socketpair()
    try:
        connection = http1connection.HTTP1Connection(iostream.IOStream(left), is_client=False)
        request = httputil.HTTPServerRequest(start_line=httputil.RequestStartLine("GET", "/", "HTTP/1.1"),
                                             headers=httputil.HTTPHeaders(Host="127.0.0.1"), connection=connection)
        _internals.close_after_response(request)
        assert connection._disconnect_on_finish is True, "HTTP1Connection._disconnect_on_finish is gone"
    finally:
        left.close()
        right.close()


def test_untimed_requests_leave_tornado_no_timer_to_start():
    """A request read by a server without timeouts schedules no timer: Tornado
    still reads its timeouts from ``HTTPServer.conn_params``."""
    from tornado.httpserver import HTTPServer

    class Hello(tornado.web.RequestHandler):
        def post(self):
            self.write(self.request.body)

    async def serve(untimed):
        server = HTTPServer(tornado.web.Application([("/", Hello)]), idle_connection_timeout=5, body_timeout=5)
        if untimed:
            _internals.untimed_requests(server)
        loop = tornado.ioloop.IOLoop.current()
        timers = []
        call_at = loop.call_at
        loop.call_at = lambda when, callback, *args, **kwargs: timers.append(callback) or call_at(
            when, callback, *args, **kwargs)
        left, right = socket.socketpair()
        try:
            server.handle_stream(iostream.IOStream(left), ("127.0.0.1", 1))
            right.setblocking(False)
            await asyncio.get_running_loop().sock_sendall(
                right, b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            answer = b""
            while not answer.endswith(b"hi"):
                answer += await asyncio.get_running_loop().sock_recv(right, 4096)
            return len(timers)
        finally:
            del loop.call_at
            right.close()
            await server.close_all_connections()

    assert asyncio.run(serve(False)) > 0, "Tornado no longer times requests: the test proves nothing"
    assert asyncio.run(serve(True)) == 0, "HTTPServer.conn_params' header_timeout or body_timeout is no longer read"


def test_unchunked_response_ends_an_http11_body_with_its_connection():
    """To an HTTP/1.1 client that asked for keep-alive: no chunks, no length, no keep-alive;
    the body as written, then the end of the connection."""
    from tornado.httpserver import HTTPServer

    class Stream(tornado.web.RequestHandler):
        async def get(self):
            _internals.unchunked_response(self.request)
            self.set_header("Connection", "close")
            self.write("bo")
            await self.flush()  # a head of unknown length, as a stream's
            self.write("dy")

    async def serve():
        server = HTTPServer(tornado.web.Application([("/", Stream)]))
        left, right = socket.socketpair()
        try:
            server.handle_stream(iostream.IOStream(left), ("127.0.0.1", 1))
            right.setblocking(False)
            loop = asyncio.get_running_loop()
            await loop.sock_sendall(right, b"GET / HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n")
            answer = b""
            while True:
                try:
                    read = await asyncio.wait_for(loop.sock_recv(right, 4096), 2)
                except asyncio.TimeoutError:
                    return answer + b" (the connection stayed open)"
                if not read:
                    return answer
                answer += read
        finally:
            right.close()
            await server.close_all_connections()

    head, _, body = asyncio.run(serve()).partition(b"\r\n\r\n")
    headers = head.lower().split(b"\r\n")
    assert headers[0] == b"http/1.1 200 ok"
    assert b"connection: close" in headers, "HTTP1Connection._request_start_line or its headers' use changed"
    assert not [h for h in headers if h.startswith((b"transfer-encoding", b"content-length"))], headers
    assert body == b"body"


def test_the_tls_handshake_failure_is_the_line_tornado_logs():
    import inspect
    import logging
    source = inspect.getsource(iostream.SSLIOStream._do_ssl_handshake)
    assert repr(_internals.TLS_HANDSHAKE_FAILURE).strip("'") in source, \
        "SSLIOStream._do_ssl_handshake no longer logs %r" % _internals.TLS_HANDSHAKE_FAILURE
    record = logging.LogRecord("tornado.general", logging.WARNING, __file__, 1, _internals.TLS_HANDSHAKE_FAILURE,
                               (7, ("127.0.0.1", 1), "wrong version"), None)
    assert _internals.is_tls_handshake_failure(record)


def test_stop_router_timers_stops_both_timers_a_router_starts():
    async def build():
        built = router.SockJSRouter(sockjs.tornado.SockJSConnection, "/s")
        timers = {"SockJSRouter._sessions_cleanup": getattr(built, "_sessions_cleanup", None),
                  "StatsCollector._callback": getattr(built.stats, "_callback", None)}
        missing = [name for name, timer in timers.items() if timer is None]
        assert not missing, "gone: %s" % ", ".join(missing)
        assert all(timer.is_running() for timer in timers.values()), "a router no longer starts its timers"
        _internals.stop_router_timers(built)
        return [name for name, timer in timers.items() if timer.is_running()]

    assert asyncio.run(build()) == []
