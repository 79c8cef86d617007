"""sockjs-tornado transports, with the broker's fixes and its websocket fast path.

Each class here replaces the sockjs-tornado handler it subclasses, for every
router the broker builds (see ``broker.sockjs.TRANSPORT_OVERRIDES``), so the
production broker and the conformance services share one code path.

Websocket fast path: a broadcast batch already holds its websocket frame as
bytes. ``write_prebuilt`` sends those bytes straight to the socket when
Tornado is not writing to the connection (the common case), with no
per-connection encoding, framing or Future. The rest of a partial write, and
any write while Tornado's buffer still holds bytes, goes through
``IOStream.write``, which keeps the byte order. permessage-deflate is never
offered (``get_compression_options`` returns None, Tornado's default), so every
connection takes the same unmasked, uncompressed bytes.

Protocol fixes: where sockjs-tornado 1.0.7 on Tornado 6 departs from the
SockJS protocol (as its test suite, sockjs-protocol, defines it), the classes
here follow the protocol: ``no-transform`` caching headers, validated
callback names, ``/**/``-prefixed JSONP, an exact eventsource type, bare 405s
on websocket URLs, close codes on the raw websocket, one frame per poll, and
HTTP/1.0 streams that end by closing. README.rst (Conformance) has the list.
"""

import logging
import re
import urllib.parse

from sockjs.tornado import transports as base
from sockjs.tornado.session import ConnectionInfo
from sockjs.tornado.transports.htmlfile import HTMLFILE_HEAD
from sockjs.tornado.util import asynchronous
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError
from tornado.websocket import WebSocketClosedError

from broker import _internals, frames
from broker.hub import SLOW_CONSUMER

LOG = logging.getLogger("broker.transports")

MESSAGE_TOO_BIG = (1009, "Message too big")
BINARY_FRAME = (1003, "SockJS carries text frames only")
CALLBACK_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")
NO_CACHE = "no-store, no-cache, no-transform, must-revalidate, max-age=0"


class ServiceHeaders:
    """Mixin for the SockJS service's HTTP handlers: caching and cross-origin headers.

    Uncacheable responses also forbid proxies to transform them
    (``no-transform``), which would break streaming and JSONP. CORS answers
    name the requesting origin, with credentials, only where the router's
    origin policy allows it; a browser then refuses the answer to any other.
    """

    def disable_cache(self):
        self.set_header("Cache-Control", NO_CACHE)

    def preflight(self):
        origin = self.request.headers.get("Origin")
        self.set_header("Vary", "Origin")
        if origin is None:
            self.set_header("Access-Control-Allow-Origin", "*")
        elif self.server.origins.allows(origin, self.request.host):
            self.set_header("Access-Control-Allow-Origin", origin)
            self.set_header("Access-Control-Allow-Credentials", "true")
        headers = self.request.headers.get("Access-Control-Request-Headers")
        if headers:
            self.set_header("Access-Control-Allow-Headers", headers)


class _PrebuiltWriter:
    """Mixin for websocket handlers: write shared, prebuilt frames to the socket.

    The socket's ``send`` and the stream's ``writing`` are looked up once,
    when the connection opens. A closed socket's ``send`` raises OSError, so a
    connection closed meanwhile costs one call.

    A connection the kernel cannot take everything from falls behind: what is
    left goes to Tornado as one write, and everything after it gathers in a
    backlog, joined and handed to Tornado as one write when the previous one
    is done. Tornado keeps a Future and more per write, far more than a small
    frame's bytes; the backlog keeps a reference to each frame, which every
    connection behind shares. So a slow connection costs at most its unsent
    bytes (``max_buffer``) and a constant. A connection whose write has not
    finished for ``write_timeout`` seconds has stopped reading: it is dropped
    as a slow consumer, like one over ``max_buffer``, and aborted.
    """

    def _attach_stream(self):
        """Look up the stream's writers; False if the client has already gone
        (it may close right after the handshake, before ``open`` runs)."""
        connection = self.ws_connection
        if connection is None or connection.stream.closed():
            return False
        stream = connection.stream
        self._stream = stream
        self._writing = stream.writing
        self._send = stream.socket.send
        self._backlog = None
        self._deadline = None
        return True

    def write_prebuilt(self, data):
        """Send ``data``; False when the connection's unsent bytes are over the bound."""
        backlog = self._backlog
        if backlog is not None:
            if self._backlog_bytes + _internals.unsent_bytes(self._stream) > self.server.max_buffer:
                return False
            backlog.append(data)
            self._backlog_bytes += len(data)
            return True
        if self._writing():
            return self._fall_behind(data)
        try:
            sent = self._send(data)
        except BlockingIOError:
            sent = 0
        except OSError:
            self._stream.close()
            return True
        if sent != len(data):
            return self._fall_behind(memoryview(data)[sent:])
        return True

    def _fall_behind(self, data):
        if self._stream.closed():
            return True
        self._backlog = []
        self._backlog_bytes = 0
        self.server.behind.add(self)
        self._stream.write(data).add_done_callback(self._written)
        loop = IOLoop.current()
        self._deadline = loop.call_later(self.server.write_timeout, self._timed_out)
        return True

    def _written(self, future):
        """Tornado has sent everything it held: hand it the backlog, or catch up."""
        IOLoop.current().remove_timeout(self._deadline)
        self.server.behind.discard(self)
        backlog, self._backlog = self._backlog, None
        if future.exception() is not None or self._stream.closed():
            return
        if backlog:
            self._fall_behind(b"".join(backlog))

    def unsent_bytes(self):
        """Bytes this connection holds for its client: Tornado's and the backlog's."""
        backlog = self._backlog_bytes if self._backlog is not None else 0
        return backlog + _internals.unsent_bytes(self._stream)

    def _timed_out(self):
        """Nothing read for ``write_timeout``: dropped, and the connection
        aborted at once, since its close frame would wait behind the rest."""
        if self._backlog is not None and self.session is not None:
            self.server.hub.drop(self.session.conn, SLOW_CONSUMER)
            self.cut()

    def cut(self):
        """Close the connection now, without waiting for the client to answer
        the close frame (Tornado waits 5 s, reading what it sends meanwhile):
        for a client cut for what it did, whose close frame is written if the
        kernel takes it."""
        self._stream.close()

    def write_message(self, message, binary=False):
        """Tornado's, for the frames sockjs-tornado writes (open, close,
        heartbeat). sockjs-tornado handles a closed connection as an IOError
        and drops the Future: a websocket already closing raises IOError here
        (Tornado raises WebSocketClosedError), and a Future that fails because
        the connection closed first is retrieved here, not logged as a Task
        exception never retrieved."""
        try:
            future = super().write_message(message, binary)
        except WebSocketClosedError:
            raise StreamClosedError() from None
        future.add_done_callback(_mark_retrieved)
        return future


def _mark_retrieved(future):
    if not future.cancelled():
        future.exception()


PING_FRAME = b"\x89\x00"


class _Pinged:
    """Mixin for websocket handlers: pinged by the router's wheel (see
    :mod:`broker.pinger`) from the upgrade to the close; one whose pong is
    late is sent a close frame ("ping timed out") and cut at once: a peer that
    does not answer pings would not answer the close frame either, and Tornado
    would hold the connection 5 s more waiting for it."""

    awaiting_pong = False

    def _join_pings(self):
        if self.server.pings is not None:
            self.server.pings.add(self)

    def ping_due(self):
        self.awaiting_pong = True
        self.write_prebuilt(PING_FRAME)

    def on_pong(self, data):
        self.awaiting_pong = False

    def ping_timed_out(self):
        self.close(reason="ping timed out")
        self.cut()

    def on_close(self):
        if self.server.pings is not None:
            self.server.pings.discard(self)
        super().on_close()


class _ShedsRequest:
    """Mixin for websocket handlers: once the session has opened, the
    request's headers and cookies, and the session's connection info, are
    dropped down to the client's address and path. A websocket answers no
    further request, and a SockJS connection is handed its connection info
    whole in ``on_open``; afterwards they only cost memory (about 2 KiB per
    connection on CPython, BENCHMARKS.rst)."""

    def _shed_request(self):
        request = self.request
        request.headers.clear()
        _internals.forget_cookies(request)
        session = self.session
        if session is not None and session.conn_info is not None:
            session.conn_info = ConnectionInfo(session.conn_info.ip, {}, {}, {}, session.conn_info.path)


class _WebSocketPolicy:
    """Mixin for websocket handlers: a page of an origin the policy does not
    allow is refused with 403 before the upgrade; one connection reads at most
    ``_internals.READ_BUDGET`` bytes per event-loop iteration, and a frame no
    client may send closes it with 1002."""

    def check_origin(self, origin):
        return self.server.origins.allows(origin, self.request.host)

    def get_websocket_protocol(self):
        return _internals.guard(super().get_websocket_protocol())


class WebSocketTransport(_internals.GetOnly, _WebSocketPolicy, _Pinged, _ShedsRequest, _PrebuiltWriter,
                         base.WebSocketTransport):
    """SockJS over websocket (``/<server>/<session>/websocket``)."""

    def open(self, session_id):
        if self._attach_stream():
            self._join_pings()
            super().open(session_id)
            self._shed_request()

    prebuilt_form = "sockjs_websocket"

    def on_message(self, message):
        if not message or not self.session:
            return
        if isinstance(message, bytes):
            LOG.debug("closing websocket %s: binary frame", self.request.remote_ip)
            self.close(*BINARY_FRAME)
            return
        try:
            messages = frames.decode_json(message)
        except ValueError:
            LOG.debug("closing websocket %s: broken JSON", self.request.remote_ip)
            self.abort_connection()
            return
        self.session.on_messages(messages if isinstance(messages, list) else (messages,))


class RawWebSocketTransport(_internals.GetOnly, _WebSocketPolicy, _Pinged, _ShedsRequest, _PrebuiltWriter,
                            base.RawWebSocketTransport):
    """Plain websocket (``/websocket``): one text frame per message, no SockJS framing.

    With no SockJS close frame to carry them, the session's close code and
    reason travel in the websocket close frame.
    """

    def open(self):
        if self._attach_stream():
            self._join_pings()
            super().open()
            self._shed_request()

    def session_closed(self):
        code, reason = self.session.get_close_reason() if self.session else (1000, "")
        _internals.detach(self)
        self.close(code, reason)

    prebuilt_form = "raw_websocket"


class _SendHandler(ServiceHeaders):
    """xhr_send and jsonp_send: a JSON array of messages for an open session.

    404 for an unknown or closed session; a body over ``max_message_size``
    closes the session and answers 413; an empty body, or JSON that is not an
    array, answers 500 "Payload expected."; bad JSON or bad UTF-8, 500
    "Broken JSON encoding.". Nothing else of the session is touched.
    """

    def post(self, session_id):
        self.preflight()
        self.handle_session_cookie()
        self.disable_cache()
        session = self.server.get_session(session_id)
        if session is None or session.is_closed:
            self.set_status(404)
            return
        if len(self.request.body) > self.server.max_message_size:
            session.close(*MESSAGE_TOO_BIG)
            self._answer(413, "Message too big.")
            return
        payload = self.payload()
        try:
            messages = frames.decode_json(payload) if payload else None
        except ValueError:
            self._answer(500, "Broken JSON encoding.")
            return
        if not isinstance(messages, list):
            self._answer(500, "Payload expected.")
            return
        session.on_messages(messages)
        self.accepted()

    def payload(self):
        return self.request.body

    def _answer(self, status, text):
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.write(text)


class XhrSendHandler(_SendHandler, base.XhrSendHandler):
    """Its 204 keeps ``Content-Type: text/plain``: without one, Firefox parses
    the empty answer as XML and logs an error (Tornado drops the header)."""

    def accepted(self):
        self.set_status(204)

    def flush(self, include_footers=False):
        if self.get_status() == 204:
            self.set_header("Content-Type", "text/plain; charset=UTF-8")
        return super().flush(include_footers)


class JSONPSendHandler(_SendHandler, base.JSONPSendHandler):
    """The body is the JSON itself, or a form whose ``d`` field holds it."""

    def payload(self):
        body = self.request.body
        content_type = self.request.headers.get("Content-Type", "")
        if content_type.split(";")[0].strip().lower() != "application/x-www-form-urlencoded":
            return body
        if not body.startswith(b"d="):
            return None
        return urllib.parse.unquote_to_bytes(body[2:].replace(b"+", b" "))

    def accepted(self):
        self._answer(200, "ok")


class _OneFramePerPoll:
    """Mixin for polling transports: a response carries exactly one frame.

    A session closed while its poll is already answering (``/close`` opens
    and closes in one go) must not write its close frame into the same
    response: the next poll gets it, at once, from the closed session.
    """

    def send_pack(self, message, binary=False):
        if self.active:
            super().send_pack(message, binary)


class _Streaming(ServiceHeaders):
    """Mixin for streaming transports: an HTTP/1.0 response has neither a
    length nor chunks, so only closing the connection ends it, even when the
    client asked for keep-alive (Tornado would keep it open)."""

    def initialize(self, server):
        super().initialize(server)
        if self.request.version != "HTTP/1.1":
            _internals.close_after_response(self.request)

    def start_stream(self, session_id, content_type, prelude):
        """Send the headers and ``prelude`` at once, then join the session (a
        session that refuses the join has already sent its close frame)."""
        self.preflight()
        self.handle_session_cookie()
        self.disable_cache()
        self.set_header("Content-Type", content_type)
        self.write(prelude)
        self.flush()
        if not _internals.attach_session(self, session_id):
            self.finish()
        elif self.session:
            self.session.flush()


class XhrPollingTransport(_OneFramePerPoll, ServiceHeaders, base.XhrPollingTransport):
    pass


class XhrStreamingTransport(_Streaming, base.XhrStreamingTransport):
    pass


class EventSourceTransport(_Streaming, base.EventSourceTransport):
    """EventSource, served as exactly ``text/event-stream`` (UTF-8 by definition)."""

    @asynchronous
    def get(self, session_id):
        self.start_stream(session_id, "text/event-stream", "\r\n")


class _CallbackTransport:
    """jsonp and htmlfile: the ``c`` parameter names the page's JavaScript
    function that receives the frames. A name outside ``[A-Za-z0-9_.]`` is
    refused with a 500, never used as given nor rewritten."""

    def callback_name(self):
        """The validated callback name, or None once a 500 has been sent."""
        callback = self.get_argument("c", None, strip=False)
        if not callback:
            error = '"callback" parameter required'
        elif not CALLBACK_NAME.match(callback):
            error = 'invalid "callback" parameter'
        else:
            return callback
        self.set_status(500)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.finish(error)
        return None


class HtmlFileTransport(_Streaming, _CallbackTransport, base.HtmlFileTransport):
    """Streaming into a hidden iframe; the page calls ``parent.<callback>``."""

    @asynchronous
    def get(self, session_id):
        callback = self.callback_name()
        if callback is not None:
            self.set_header("X-Content-Type-Options", "nosniff")
            frame_ancestors = self.server.origins.frame_ancestors()
            if frame_ancestors:
                self.set_header("Content-Security-Policy", frame_ancestors)
            self.start_stream(session_id, "text/html; charset=UTF-8", HTMLFILE_HEAD % callback)

    def send_pack(self, message, binary=False):
        """One ``<script>`` element calling ``p`` with the frame, as a string
        literal that nothing in a message can break out of."""
        self.active = False
        try:
            self.notify_sent(len(message))
            self.write("<script>\np(%s);\n</script>\r\n" % frames.script_string(message))
            self.flush().add_done_callback(self.send_complete)
        except IOError:
            self.session.delayed_close()
            _internals.detach(self)


class JSONPTransport(ServiceHeaders, _CallbackTransport, base.JSONPTransport):
    """JSONP polling: one ``/**/callback("frame");`` script per request. The
    leading comment keeps a browser from sniffing the response as anything
    but a script (the Rosetta Flash defence). As with xhr polling, one frame
    per response (see ``_OneFramePerPoll``)."""

    def get(self, session_id):
        if self.callback_name() is not None:
            super().get(session_id)

    def send_pack(self, message, binary=False):
        if not self.active:
            return
        self.active = False
        body = "/**/%s(%s);\r\n" % (self.callback, frames.script_string(message))
        self.set_header("Content-Type", "application/javascript; charset=UTF-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        self.set_header("Content-Length", len(body))
        try:
            self.write(body)
            self.flush().add_done_callback(self.send_complete)
        except IOError:
            self.session.delayed_close()
