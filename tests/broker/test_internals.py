"""The private names of Tornado, sockjs-tornado and redis-py: all in
broker._internals, each still there in the installed libraries."""

import asyncio
import os
import platform
import re
import signal
import socket
import subprocess
import sys

import pytest

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

from deployment import ROOT

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
    for filename in sorted(os.listdir(BROKER)):
        if not filename.endswith(".py") or filename == "_internals.py":
            continue
        with open(os.path.join(BROKER, filename)) as f:
            source = f.read()
        private = web | redis_py if re.search(r"^import redis|^from redis", source, re.M) else web
        used = set(re.findall(r"\.(_\w+)", source)) | set(re.findall(r"def (_\w+)", source))
        offenders += ["%s: %s" % (filename, name) for name in sorted(used & private)]
    assert not offenders, "private library names outside broker/_internals.py: %s" % offenders


def test_take_socket_hands_over_the_socket_and_what_was_read_ahead():
    async def upgrade():
        left, right = socket.socketpair()
        try:
            stream = iostream.IOStream(left)
            right.sendall(b"GET\r\n" + b"frames")
            assert await stream.read_until(b"\r\n") == b"GET\r\n"
            sock, buffered = _internals.take_socket(stream)
            # The broker registers the socket with asyncio itself: nothing may watch it still.
            watched = asyncio.get_running_loop().remove_reader(sock.fileno())
            return sock is left, watched, buffered
        finally:
            left.close()
            right.close()

    taken, watched, buffered = asyncio.run(upgrade())
    assert taken
    assert not watched, "the event loop still watches the socket for Tornado"
    assert buffered == b"frames", "BaseIOStream._read_buffer or _read_buffer_size changed"


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


def test_the_private_methods_the_broker_calls_or_overrides_exist():
    for owner, name in ((pollingbase.PollingTransportBase, "_attach_session"),
                        (sockjs_transports.HtmlFileTransport, "_detach")):
        assert callable(getattr(owner, name, None)), "%s.%s is gone" % (owner.__name__, name)


def unsent(pool):
    """Bytes the transports of ``pool``'s connections hold, not yet taken by the kernel."""
    return sum(connection._writer.transport.get_write_buffer_size()
               for connection in pool._in_use_connections if connection._writer is not None)


def test_abort_redis_connections_fails_a_write_the_kernel_could_not_buffer(start_redis):
    server = start_redis()

    async def abort_a_stuck_write():
        client = redis.asyncio.from_url(server.url)
        try:
            await client.ping()
            server.process.send_signal(signal.SIGSTOP)
            try:
                stuck = asyncio.ensure_future(client.set("big", b"x" * (24 * 1024 * 1024)))
                deadline = asyncio.get_running_loop().time() + 5
                while not unsent(client.connection_pool):
                    assert asyncio.get_running_loop().time() < deadline, "the kernel took 24 MB for a stopped Redis"
                    await asyncio.sleep(0.01)
                _internals.abort_redis_connections(client.connection_pool)
                done, _ = await asyncio.wait([stuck], timeout=5)
                assert done, "the write still waits: Pool._available_connections, _in_use_connections " \
                             "or Connection._writer changed"
                failure = stuck.exception()
            finally:
                server.process.send_signal(signal.SIGCONT)
            # redis-py reconnects on the next call; the unsent part was dropped, not applied.
            return failure, await client.get("big")
        finally:
            await client.aclose()

    failure, stored = asyncio.run(abort_a_stuck_write())
    assert isinstance(failure, (redis.RedisError, OSError)), repr(failure)
    assert stored is None


@pytest.mark.skipif(platform.python_implementation() != "PyPy", reason="PyPy's gc module")
def test_pypys_nursery_size_is_read_as_a_number():
    """``gc.get_stats()._s.nursery_size`` (PyPy 7.3): the size PYPY_GC_NURSERY set, in bytes."""
    done = subprocess.run([sys.executable, "-c", "from broker import _internals; print(_internals.pypy_nursery_bytes())"],
                          capture_output=True, text=True,
                          env=dict(os.environ, PYPY_GC_NURSERY="3MB", PYTHONPATH=ROOT))
    assert done.stdout.strip() == str(3 << 20), done.stderr
