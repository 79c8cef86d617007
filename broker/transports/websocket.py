"""Websockets on their own sockets: Tornado answers the upgrade, then lets go.

Tornado's websocket keeps, for a connection's whole life, its request
handler, the request and its HTTP connection, an IOStream, and a chain of
seven suspended coroutines from the HTTP server's request loop down to the
frame reader: about 22 KB a connection on CPython, and over a hundred
objects for the garbage collector to track (BENCHMARKS.rst, "C10K"). A websocket
needs none of it once the handshake is answered. Here a request handler
answers the upgrade (:class:`WebSocketTransport`,
:class:`RawWebSocketTransport`), takes the socket from Tornado, and hands it
to a :class:`WebSocket`: the socket, a :class:`broker.protocol.rfc6455.ServerProtocol`
and the SockJS session, which the event loop calls when the socket is
readable, or writable while the connection is behind.

What the frames mean and what answers them (pongs, close frames, which
code) is the protocol's; a :class:`WebSocket` pumps bytes between it and
the socket, and acts on its events. Writing, the backlog, the slow-consumer
bound and closing at once are :class:`broker.transports.owned_socket.OwnedSocket`'s.
Rules this module keeps:

* Reading: frames parsed up to READ_BUDGET per event-loop turn (see
  :mod:`broker.protocol.rfc6455`); a connection that has whole frames left
  is not watched for reading until they are parsed, on the next turn. So
  one client holds the loop for one budget at a time, and its buffer holds
  at most a budget and a frame.
* Every frame, the broadcasts' prebuilt ones and the session's own (open,
  heartbeat, close), pongs and close frames, goes out in the order written.
  What the protocol has due is written as soon as it is due (but the answer
  to a close frame, see Closing), a pong that waited while a backlog did
  once the backlog is written.
* Closing: the protocol's close frame is the socket's last bytes; then only the
  client's close frame is awaited, CLOSE_TIMEOUT seconds at most. A client's
  close frame is answered, and the socket closed once the answer is written
  (after the backlog, if any). What the client published just before its
  close frame, or before a frame that broke the protocol, goes out in the
  hub's flush first, to this client too. A frame that breaks RFC 6455 is answered with
  its close code, and once that is written the socket is shut for writing:
  what the client still sends is read and dropped until it closes its side
  (CLOSE_TIMEOUT at most), so that the close frame is not lost to a reset.
  However it ends, the SockJS session is closed on the next turn (leaving
  the heartbeat wheel as it detaches).
"""

import logging

from sockjs.tornado.transports.rawwebsocket import RawSession
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

from broker import _internals
from broker.protocol import frames, rfc6455
from broker.protocol.batch import RAW_WEBSOCKET, SOCKJS_WEBSOCKET
from broker.protocol.close_codes import BINARY_FRAME, PING_TIMEOUT
from broker.transports import http_transports
from broker.transports.owned_socket import READ_BUDGET, OwnedSocket, lean_connection_info, opening_info

LOG = logging.getLogger("broker.transports.websocket")

CLOSE_TIMEOUT = 5.0


class WebSocket(OwnedSocket):
    """One websocket after its upgrade, and the SockJS session's handler.

    ``server`` is the router; ``release`` (or None) is called once the socket
    is closed; ``info`` is the request's connection info, which the session
    takes whole when it opens and the connection then forgets.
    """

    __slots__ = ("_protocol", "_info", "_closing")

    name = None
    prebuilt_form = None
    active = True

    def __init__(self, router, sock, release, info):
        super().__init__(router, sock, release)
        self._protocol = rfc6455.ServerProtocol(router.rules.max_message_size)
        self._info = info
        self._closing = None
        if router.node.pings is not None:
            router.node.pings.add(self)
        router.stats.on_conn_opened()

    # What the SockJS session calls.

    def get_conn_info(self):
        return self._info

    def send_pack(self, message, binary=False):
        """The session's own frames (open, heartbeat, close, a message sent to
        this client alone) are queued even past ``max_buffer``, as Tornado
        queued them: a slow consumer still gets told why it is dropped."""
        if isinstance(message, str):
            message = message.encode()
        self.write_unbounded(frames.websocket_frame(message, rfc6455.BINARY if binary else rfc6455.TEXT))

    def session_closed(self):
        self.close()
        self.leave_session()

    def _join(self, session):
        """Open ``session`` with this connection as its handler; then the
        request's headers, cookies and arguments are forgotten, by the
        connection and the session (about 1 KB a connection)."""
        if not session.set_handler(self):
            self.close()
            return
        self.session = session
        info = self._info
        self._info = None
        session.verify_state()
        session.conn_info = lean_connection_info(info)

    def on_binary(self, data):
        """Text is all a broadcast carries: a binary message closes with 1003."""
        LOG.debug("closing websocket: binary frame")
        self.close(*BINARY_FRAME)

    def ended(self):
        session = self.session
        if session is not None:
            self.leave_session()
            session.close()

    # What the broker calls.

    def close(self, code=1000, reason=""):
        """Send a close frame, once, and wait at most CLOSE_TIMEOUT for the client's."""
        self._protocol.send_close(code, reason)
        self._send_close()

    @property
    def awaiting_pong(self):
        return self._protocol.awaiting_pong

    def ping_due(self):
        self._protocol.send_ping()
        self._send_data()

    def ping_timed_out(self):
        self._protocol.send_close(*PING_TIMEOUT)
        self._send_close()
        self.cut()

    # The event loop's side.

    def received(self, data):
        """Handle ``data`` read from the client."""
        self._protocol.receive_data(data)
        self._parse()

    def _parse(self):
        protocol = self._protocol
        published = False
        for kind, value in protocol.events_received(READ_BUDGET):
            if not self.is_open:
                return
            if kind == rfc6455.TEXT:
                if protocol.state == rfc6455.OPEN:
                    self.on_text(value)
                    published = True
            elif kind == rfc6455.BINARY:
                if protocol.state == rfc6455.OPEN:
                    self.on_binary(value)
            elif kind == rfc6455.PING:
                self._send_data()
            elif kind == rfc6455.CLOSE or kind == rfc6455.FAIL:
                if published:
                    # The hub flushes what this client just published once the
                    # loop's current callbacks have run: the close goes after it.
                    IOLoop.current().add_callback(self._client_ended, value)
                else:
                    self._client_ended(value)
        if protocol.more and self.is_open:
            self.pause_reading(True)
            IOLoop.current().add_callback(self._resume)

    def _client_ended(self, value):
        """Write the protocol's answer to the client's close frame, or to the
        frame that broke the protocol (``value``, its code and reason)."""
        if not self.is_open:
            return
        if self._protocol.ended == rfc6455.FAIL:
            LOG.debug("closing websocket: %s", value[1])
        self._send_close()
        self._end_when_written()

    def _resume(self):
        if not self.is_open:
            return
        self._parse()
        if not self._protocol.more and self.is_open:
            self.pause_reading(False)

    def _send_data(self):
        """Write the protocol's pings and pong due; a pong waits while the socket is behind."""
        for data in self._protocol.data_to_send(self.behind):
            self.write_unbounded(data)

    def _send_close(self):
        """Write the protocol's close frame, if one is due, as the socket's
        last bytes; then the client's end is awaited CLOSE_TIMEOUT at most."""
        data = self._protocol.close_to_send()
        if data is not None and self.write_last(data):
            self._closing = IOLoop.current().call_later(CLOSE_TIMEOUT, self.cut)

    def _end_when_written(self):
        """The client's side has ended (its close frame, or a broken one):
        once the close frame is written, close, or after a broken frame shut
        for writing (see the module's rules)."""
        if not self.is_open or self.behind:
            return
        if self._protocol.ended == rfc6455.CLOSE:
            self.cut()
        else:
            self.shutdown_writing()

    def caught_up(self):
        if self._protocol.ended is not None:
            self._end_when_written()
        else:
            self._send_data()

    def closed(self):
        if self._closing is not None:
            IOLoop.current().remove_timeout(self._closing)
            self._closing = None
        if self.router.node.pings is not None:
            self.router.node.pings.discard(self)


class SockJSWebSocket(WebSocket):
    """SockJS over websocket: SockJS frames both ways."""

    __slots__ = ()

    name = "websocket"
    prebuilt_form = SOCKJS_WEBSOCKET

    def open(self, session_id):
        self._join(self.router.create_session(session_id, register=False))
        if self.session is not None:
            self.session.flush()

    def on_text(self, text):
        if not text or self.session is None:
            return
        try:
            messages = frames.decode_json(text)
        except ValueError:
            LOG.debug("closing websocket %s: broken JSON", self.session.conn_info.ip)
            self.cut()
            return
        self.session.on_messages(messages if isinstance(messages, list) else (messages,))



class RawWebSocket(WebSocket):
    """A plain websocket (``/websocket``): one text frame per message, no
    SockJS framing; the session's close code and reason travel in the
    websocket close frame."""

    __slots__ = ()

    name = "rawwebsocket"
    prebuilt_form = RAW_WEBSOCKET

    def open(self):
        self._join(RawSession(self.router.get_connection_class(), self.router))

    def on_text(self, text):
        if self.session is not None:
            self.session.on_message(text)


    def session_closed(self):
        self.close(*self.session.get_close_reason())
        self.leave_session()


class _Upgrade(RequestHandler):
    """Answers a websocket upgrade and hands the socket to ``connection_class``.

    Any method but GET is answered with a bare 405; while draining or over
    the accept rate, a 503 comes before the upgrade. A page of an origin the router's policy
    does not allow is refused with 403."""

    connection_class = None

    def initialize(self, server):
        self.server = server

    def prepare(self):
        if self.request.method != "GET":
            self.set_status(405)
            self.set_header("Allow", "GET")
            self.clear_header("Content-Type")
            self.finish()
        else:
            http_transports.refuse_new_session(self, take=True)

    async def get(self, *args, **kwargs):
        headers = self.request.headers
        refusal = rfc6455.handshake_refusal(headers)
        origin = headers.get("Origin") or headers.get("Sec-WebSocket-Origin")
        if refusal is None and origin is not None and not self.server.rules.origins.allows(origin, self.request.host):
            refusal = 403, "Cross origin websockets not allowed", {}
        if refusal is not None:
            status, body, extra = refusal
            self.set_status(status)
            for name, value in extra.items():
                self.set_header(name, value)
            self.finish(body)
            return
        request = self.request
        info = opening_info(request)
        self.clear_header("Content-Type")
        self.set_status(101)
        self.set_header("Upgrade", "websocket")
        self.set_header("Connection", "Upgrade")
        self.set_header("Sec-WebSocket-Accept", rfc6455.accept_value(headers["Sec-WebSocket-Key"]))
        self.finish()
        stream = self.detach()
        try:
            if stream.writing():
                await stream.write(b"")
        except StreamClosedError:
            return
        if stream.closed():
            return
        # The conformance services run on Tornado's own streams, without limits.
        release = stream.release_function() if hasattr(stream, "release_function") else None
        sock, buffered = _internals.take_socket(stream)
        connection = self.connection_class(self.server, sock, release, info)
        connection.open(*args, **kwargs)
        if buffered:
            connection.received(buffered)


class WebSocketTransport(_Upgrade):
    """SockJS over websocket (``/<server>/<session>/websocket``)."""

    connection_class = SockJSWebSocket


class RawWebSocketTransport(_Upgrade):
    """Plain websocket (``/websocket``)."""

    connection_class = RawWebSocket
