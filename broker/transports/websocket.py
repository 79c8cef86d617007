"""Websockets on their own sockets: Tornado answers the upgrade, then lets go.

Tornado's websocket keeps, for a connection's whole life, its request
handler, the request and its HTTP connection, an IOStream, and a chain of
seven suspended coroutines from the HTTP server's request loop down to the
frame reader: about 18 KB a connection on CPython, and over a hundred
objects for the garbage collector to track (BENCHMARKS.rst, "C10K"). A websocket
needs none of it once the handshake is answered. Here a request handler
answers the upgrade (:class:`WebSocketTransport`,
:class:`RawWebSocketTransport`), takes the socket from Tornado, and hands it
to a :class:`WebSocket`: the socket, a :class:`broker.protocol.rfc6455.ServerProtocol`
and the SockJS session, which the event loop calls when the socket is
readable, or writable while the connection is behind.

Rules this module keeps:

* Reading: one ``recv`` of at most READ_BUDGET bytes per event-loop turn,
  and frames parsed up to the same budget (see :mod:`broker.protocol.rfc6455`); a
  connection that has whole frames left is not watched for reading until
  they are parsed, on the next turn. So one client holds the loop for one
  budget at a time, and its buffer holds at most a budget and a frame.
* Writing: every frame, the broadcasts' prebuilt ones and the session's
  own (open, heartbeat, close), pongs and close frames, goes out in the
  order written, through :meth:`WebSocket.write_prebuilt` (the session's own
  frames and close frames even past the bound). What the kernel does not take
  waits in a backlog, written with one ``sendmsg`` per writable event; a
  backlog over the router's ``max_buffer`` refuses more (the hub drops the
  slow consumer), and one not emptied for ``write_timeout`` seconds is
  dropped as a slow consumer too, and its socket closed. While a backlog
  waits, pings are not answered one by one: the latest is answered once it
  is written (RFC 6455 section 5.5.3), so a client that pings without
  reading queues nothing.
* Closing: nothing is written after the server's close frame; then only the
  client's close frame is awaited, CLOSE_TIMEOUT seconds at most. A client's
  close frame is answered, and the socket closed once the answer is written
  (after the backlog, if any). What the client published just before its
  close frame, or before a frame that broke the protocol, goes out in the
  hub's flush first, to this client too. A frame that breaks RFC 6455 is answered with
  its close code, and once that is written the socket is shut for writing:
  what the client still sends is read and dropped until it closes its side
  (CLOSE_TIMEOUT at most), so that the close frame is not lost to a reset.
  :meth:`WebSocket.cut` closes at once. However it ends, the socket is
  closed and its connection released (event loop, ping wheel, connection
  limits) at once, and the SockJS session is closed on the next turn, never
  from inside a broadcast (leaving the heartbeat wheel as it detaches).
"""

import asyncio
import logging
import socket
import types

from sockjs.tornado.session import ConnectionInfo
from sockjs.tornado.transports.rawwebsocket import RawSession
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError
from tornado.web import RequestHandler

from broker import _internals
from broker.protocol import frames, rfc6455
from broker.protocol.close_codes import BINARY_FRAME, PING_TIMEOUT, SLOW_CONSUMER
from broker.transports import http_transports

LOG = logging.getLogger("broker.transports.websocket")

READ_BUDGET = 64 * 1024
CLOSE_TIMEOUT = 5.0
# sendmsg takes at most this many buffers (IOV_MAX is 1024 on Linux).
SENDMSG_BUFFERS = 512
PING_FRAME = frames.websocket_frame(b"", rfc6455.PING)
# What a session keeps of its request's cookies, arguments and headers once
# open: one shared, read-only empty mapping rather than three dicts each.
_NOTHING = types.MappingProxyType({})
# What the event loop watches a socket for (WebSocket._watching).
_READ = 1
_WRITE = 2


class WebSocket:
    """One websocket after its upgrade, and the SockJS session's handler.

    ``server`` is the router; ``release`` (or None) is called once the socket
    is closed; ``info`` is the request's connection info, which the session
    takes whole when it opens and the connection then forgets.
    """

    __slots__ = ("server", "session", "awaiting_pong", "_sock", "_send", "_fd", "_protocol", "_release",
                 "_info", "_reading", "_watching", "_backlog", "_backlog_bytes", "_deadline", "_closing",
                 "_pong_owed")

    name = None
    prebuilt_form = None
    active = True

    def __init__(self, server, sock, release, info):
        self.server = server
        self.session = None
        self.awaiting_pong = False
        self._sock = sock
        self._send = sock.send
        self._fd = sock.fileno()
        self._protocol = rfc6455.ServerProtocol(server.rules.max_message_size)
        self._release = release
        self._info = info
        self._reading = True
        self._watching = 0
        self._backlog = None
        self._backlog_bytes = 0
        self._deadline = None
        self._closing = None
        self._pong_owed = None
        if server.settings["disable_nagle"]:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:  # reset already: the first read or write finds out and closes
                pass
        self._watch()
        if server.node.pings is not None:
            server.node.pings.add(self)
        server.stats.on_conn_opened()

    # What the SockJS session calls.

    def get_conn_info(self):
        return self._info

    def send_pack(self, message, binary=False):
        """The session's own frames (open, heartbeat, close, a message sent to
        this client alone) are queued even past ``max_buffer``, as Tornado
        queued them: a slow consumer still gets told why it is dropped."""
        if self._closing is not None:
            return
        if isinstance(message, str):
            message = message.encode()
        self._write_unbounded(frames.websocket_frame(message, rfc6455.BINARY if binary else rfc6455.TEXT))

    def session_closed(self):
        self.close()
        self._leave_session()

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
        session.conn_info = ConnectionInfo(info.ip, _NOTHING, _NOTHING, _NOTHING, info.path)

    def _leave_session(self):
        if self.session is not None:
            self.session.remove_handler(self)
            self.session = None

    def on_binary(self, data):
        """Text is all a broadcast carries: a binary message closes with 1003."""
        LOG.debug("closing websocket: binary frame")
        self.close(*BINARY_FRAME)

    def _ended(self):
        session = self.session
        if session is not None:
            self._leave_session()
            session.close()

    # What the broker calls.

    def write_prebuilt(self, data):
        """Send ``data`` (bytes of whole frames); False when the connection's
        unsent bytes are over the router's ``max_buffer``. Once the close frame
        is written, ``data`` is dropped."""
        if self._closing is not None:
            return True
        backlog = self._backlog
        if backlog is not None:
            if self._backlog_bytes > self.server.rules.max_buffer:
                return False
            backlog.append(data)
            self._backlog_bytes += len(data)
            return True
        try:
            sent = self._send(data)
        except (BlockingIOError, InterruptedError):
            sent = 0
        except OSError:
            self._close_now()
            return True
        if sent != len(data):
            self._fall_behind(memoryview(data)[sent:])
        return True

    def _write_unbounded(self, frame):
        """Send ``frame``, or queue it behind the backlog whatever its size."""
        if self._backlog is not None:
            self._backlog.append(frame)
            self._backlog_bytes += len(frame)
        else:
            self.write_prebuilt(frame)

    def unsent_bytes(self):
        return self._backlog_bytes

    def close(self, code=1000, reason=""):
        """Send a close frame, once, and wait at most CLOSE_TIMEOUT for the client's."""
        if self._write_close(code, reason):
            self._closing = IOLoop.current().call_later(CLOSE_TIMEOUT, self._close_now)

    def _write_close(self, code, reason):
        """Write the close frame unless one was; whether the socket is still open after writing it."""
        if self._sock is None or self._closing is not None:
            return False
        self._write_unbounded(frames.websocket_frame(rfc6455.close_payload(code, reason), rfc6455.CLOSE))
        return self._sock is not None

    def cut(self):
        """Close now, without waiting for the client: for a client cut for
        what it did, whose close frame is written if the kernel takes it."""
        self._close_now()

    def ping_due(self):
        self.awaiting_pong = True
        self.write_prebuilt(PING_FRAME)

    def ping_timed_out(self):
        self._write_close(*PING_TIMEOUT)
        self.cut()

    # The event loop's side.

    def received(self, data):
        """Handle ``data`` read from the client."""
        self._protocol.receive_data(data)
        self._parse()

    def _read(self):
        try:
            data = self._sock.recv(READ_BUDGET)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close_now()
            return
        if not data:
            self._close_now()
            return
        self.received(data)

    def _parse(self):
        protocol = self._protocol
        published = False
        for kind, value in protocol.events(READ_BUDGET):
            if self._sock is None:
                return
            if kind == rfc6455.TEXT:
                if self._closing is None:
                    self.on_text(value)
                    published = True
            elif kind == rfc6455.BINARY:
                if self._closing is None:
                    self.on_binary(value)
            elif kind == rfc6455.PING:
                self._pong(value)
            elif kind == rfc6455.PONG:
                self.awaiting_pong = False
            elif published:
                # The hub flushes what this client just published once the
                # loop's current callbacks have run: the close goes after it.
                IOLoop.current().add_callback(self._client_ended, kind, value)
            else:
                self._client_ended(kind, value)
        if protocol.more and self._sock is not None:
            self._reading = False
            self._watch()
            IOLoop.current().add_callback(self._resume)

    def _client_ended(self, kind, value):
        """Answer the client's close frame, or the frame that broke the protocol."""
        if self._sock is None:
            return
        if kind == rfc6455.CLOSE:
            self.close(value[0])
        else:
            LOG.debug("closing websocket: %s", value[1])
            self.close(*value)
        self._end_when_written()

    def _resume(self):
        if self._sock is None:
            return
        self._parse()
        if not self._protocol.more and self._sock is not None:
            self._reading = True
            self._watch()

    def _end_when_written(self):
        """The client's side has ended (its close frame, or a broken one):
        once the close frame is written, close, or after a broken frame shut
        for writing (see the module's rules)."""
        if self._sock is None or self._backlog is not None:
            return
        if self._protocol.ended == rfc6455.CLOSE:
            self._close_now()
            return
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            self._close_now()

    def _pong(self, payload):
        if self._backlog is None:
            self.write_prebuilt(frames.websocket_frame(payload, rfc6455.PONG))
        else:
            self._pong_owed = payload

    def _watch(self):
        """Have the event loop watch the socket for reading unless paused, for
        writing while behind, and for nothing once closed. Through asyncio's
        loop itself: Tornado's ``add_handler`` would keep a dict entry, a tuple
        and a set entry more per socket."""
        events = 0
        if self._sock is not None:
            events = (_READ if self._reading else 0) | (_WRITE if self._backlog is not None else 0)
        changed = events ^ self._watching
        if not changed:
            return
        self._watching = events
        loop = asyncio.get_running_loop()
        if changed & _READ:
            if events & _READ:
                loop.add_reader(self._fd, self._read)
            else:
                loop.remove_reader(self._fd)
        if changed & _WRITE:
            if events & _WRITE:
                loop.add_writer(self._fd, self._write_backlog)
            else:
                loop.remove_writer(self._fd)

    def _fall_behind(self, rest):
        self._backlog = [rest]
        self._backlog_bytes = len(rest)
        self.server.behind.add(self)
        self._deadline = IOLoop.current().call_later(self.server.rules.write_timeout, self._timed_out)
        self._watch()

    def _write_backlog(self):
        backlog = self._backlog
        if backlog is None or self._sock is None:
            return
        try:
            sent = self._sock.sendmsg(backlog[:SENDMSG_BUFFERS])
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            self._close_now()
            return
        self._backlog_bytes -= sent
        done = 0
        for buffer in backlog:
            size = len(buffer)
            if sent < size:
                if sent:
                    backlog[done] = memoryview(buffer)[sent:]
                break
            sent -= size
            done += 1
        del backlog[:done]
        if not backlog:
            self._caught_up()

    def _caught_up(self):
        self._backlog = None
        self._backlog_bytes = 0
        self.server.behind.discard(self)
        IOLoop.current().remove_timeout(self._deadline)
        self._deadline = None
        self._watch()
        if self._protocol.ended is not None:
            self._end_when_written()
        elif self._pong_owed is not None:
            payload, self._pong_owed = self._pong_owed, None
            self._pong(payload)

    def _timed_out(self):
        """Nothing taken for ``write_timeout``: dropped, and cut, since its
        close frame would wait behind the rest."""
        self._deadline = None
        if self.session is not None and self.server.node.hub is not None:
            self.server.node.hub.drop(self.session.conn, SLOW_CONSUMER)
        self.cut()

    def _close_now(self):
        sock = self._sock
        if sock is None:
            return
        self._sock = None
        self._watch()
        sock.close()
        loop = IOLoop.current()
        if self._release is not None:
            self._release()
        for timer in (self._deadline, self._closing):
            if timer is not None:
                loop.remove_timeout(timer)
        self._deadline = None
        self._backlog = None
        self._backlog_bytes = 0
        self.server.behind.discard(self)
        if self.server.node.pings is not None:
            self.server.node.pings.discard(self)
        self.server.stats.on_conn_closed()
        loop.add_callback(self._ended)


class SockJSWebSocket(WebSocket):
    """SockJS over websocket: SockJS frames both ways."""

    __slots__ = ()

    name = "websocket"
    prebuilt_form = "sockjs_websocket"

    def open(self, session_id):
        self._join(self.server.create_session(session_id, register=False))
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
    prebuilt_form = "raw_websocket"

    def open(self):
        self._join(RawSession(self.server.get_connection_class(), self.server))

    def on_text(self, text):
        if self.session is not None:
            self.session.on_message(text)


    def session_closed(self):
        self.close(*self.session.get_close_reason())
        self._leave_session()


class _Upgrade(RequestHandler):
    """Answers a websocket upgrade and hands the socket to ``connection_class``.

    Any method but GET is answered with a bare 405; over the accept rate, a
    503 comes before the upgrade. A page of an origin the router's policy
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
            http_transports.refuse_over_accept_rate(self, take=True)

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
        info = ConnectionInfo(request.remote_ip, request.cookies, request.arguments, request.headers,
                              request.path)
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
