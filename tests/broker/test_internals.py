"""The private names of Tornado and sockjs-tornado: all in broker._internals,
each still there in the installed libraries."""

import asyncio
import inspect
import os
import re
import socket

import sockjs.tornado
import tornado
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


def library_private_names():
    """Private names the libraries' classes define, or set on ``self`` anywhere
    in their source."""
    names = {name for cls in LIBRARY_CLASSES for name in dir(cls)}
    for package in (tornado, sockjs.tornado):
        for directory, _, files in os.walk(os.path.dirname(package.__file__)):
            for filename in files:
                if filename.endswith(".py"):
                    with open(os.path.join(directory, filename)) as f:
                        names.update(re.findall(r"self\.(_\w+)\s*[:=]", f.read()))
    return {name for name in names if name.startswith("_") and not name.startswith("__")}


def test_no_other_broker_module_names_a_private_name_of_the_libraries():
    private = library_private_names()
    offenders = []
    for filename in sorted(os.listdir(BROKER)):
        if not filename.endswith(".py") or filename == "_internals.py":
            continue
        with open(os.path.join(BROKER, filename)) as f:
            source = f.read()
        used = set(re.findall(r"\.(_\w+)", source)) | set(re.findall(r"def (_\w+)", source))
        offenders += ["%s: %s" % (filename, name) for name in sorted(used & private)]
    assert not offenders, "private library names outside broker/_internals.py: %s" % offenders


def test_unsent_bytes_counts_what_the_kernel_has_not_taken():
    async def fill():
        left, right = socket.socketpair()
        left.setblocking(False)
        stream = iostream.IOStream(left)
        try:
            assert _internals.unsent_bytes(stream) == 0
            stream.write(b"x" * (8 << 20)).add_done_callback(lambda future: future.exception())
            unsent, writing = _internals.unsent_bytes(stream), stream.writing()
            stream.close()
            return unsent, writing, _internals.unsent_bytes(stream)
        finally:
            right.close()

    unsent, writing, after_close = asyncio.run(fill())
    assert 0 < unsent <= 8 << 20, "BaseIOStream._write_buffer or _StreamBuffer.__len__ changed"
    assert writing
    assert after_close == 0


def test_close_after_response_sets_what_tornado_reads():
    left, right = socket.socketpair()
    try:
        connection = http1connection.HTTP1Connection(iostream.IOStream(left), is_client=False)
        request = httputil.HTTPServerRequest(method="GET", uri="/", connection=connection)
        _internals.close_after_response(request)
        assert connection._disconnect_on_finish is True, "HTTP1Connection._disconnect_on_finish is gone"
    finally:
        left.close()
        right.close()


def test_the_private_methods_the_broker_calls_or_overrides_exist():
    for owner, name in ((pollingbase.PollingTransportBase, "_attach_session"),
                        (sockjs_transports.WebSocketTransport, "_detach"),
                        (sockjs_transports.RawWebSocketTransport, "_detach"),
                        (websocket.WebSocketHandler, "_execute")):
        assert callable(getattr(owner, name, None)), "%s.%s is gone" % (owner.__name__, name)


def test_websocket_frames_are_still_read_through_read_bytes():
    """The read budget and the header guard wrap WebSocketProtocol13's
    _receive_frame, which must start each frame by reading its 2-byte header
    through _read_bytes."""
    for name in ("_read_bytes", "_receive_frame"):
        assert callable(getattr(websocket.WebSocketProtocol13, name, None)), \
            "WebSocketProtocol13.%s is gone" % name
    source = inspect.getsource(websocket.WebSocketProtocol13._receive_frame)
    assert re.search(r"^\s*data = await self\._read_bytes\(2\)", source, re.M), \
        "WebSocketProtocol13._receive_frame no longer begins with the 2-byte header read"
    assert issubclass(_internals._GuardedProtocol, websocket.WebSocketProtocol13)


def test_forget_cookies_drops_what_the_request_parsed():
    request = httputil.HTTPServerRequest(method="GET", uri="/", headers=httputil.HTTPHeaders({"Cookie": "a=1"}))
    assert request.cookies["a"].value == "1"
    _internals.forget_cookies(request)
    assert "_cookies" not in vars(request), "HTTPServerRequest no longer caches its cookies in _cookies"
    assert request.cookies["a"].value == "1", "parsed again on demand"
