"""The streaming transports on their own sockets: Tornado answers the request, then lets go.

xhr-streaming, eventsource and htmlfile are one long HTTP response each,
which the server writes for as long as the client reads. Tornado would keep
for each its request handler, the request, the HTTP connection and an
IOStream, and write every broadcast through them, framed and flushed for
that one session (about 14 KB and 10 us a delivery). Here a request handler
checks the request and sends the head and the transport's prelude
(:class:`XhrStreamingTransport`, :class:`EventSourceTransport`,
:class:`HtmlFileTransport`), takes the socket from Tornado and hands it to
a :class:`Stream`, the SockJS session's handler from then on, which writes
as a websocket does (:class:`broker.transports.owned_socket.OwnedSocket`).

Rules this module keeps:

* A broadcast is framed once per transport and chunking
  (:class:`broker.protocol.batch.Streamed`) and written as the same bytes to
  every stream of that kind: while a stream serves a session, the session's
  connection takes the room's batches in the stream's form, straight
  through :meth:`Stream.write_batch` (:meth:`broker.core.hub.Hub.move`).
  Only the session's own frames (open, heartbeat, close) are framed per
  stream. Messages that arrive while a session has no
  stream wait in its queue (bounded by ``max_buffer``) and go out in one
  ``a[...]`` frame when the client reopens.
* A body is chunked for HTTP/1.1 and ends with the connection for HTTP/1.0,
  but for htmlfile, whose body always ends with its connection, unchunked.
  Every response says ``Connection: close``: once taken from Tornado, a
  socket cannot serve another request, so a body ends with its connection,
  and the client opens its next request on a new one, as it would after
  any streaming response.
* An htmlfile body is unchunked because the browser must see its end as an
  end, however it comes: a chunked body cut short (a broker killed, or cut
  off by a proxy) fails the iframe's load, and Chromium then leaves its
  document loading for good, firing no event at all, while the page's only
  watch on the stream is that document's ``onload`` (sockjs-client drops its
  own once the stream has started). Ended with its connection, the same
  body is complete: ``onload`` fires, and the client reopens the stream at
  once, on a broker that tells it the session is gone. A router whose
  ``chunked_htmlfile`` setting is true (the conformance services: the SockJS
  suite reads htmlfile by chunks) chunks it as the others.
* After its response limit a stream ends its body and leaves the session,
  so that a browser can free what the response holds; the client reopens
  the stream on the same session. Each stream draws its limit between half
  of ``response_limit`` (SockJS's 128 KiB) and all of it
  (:func:`drawn_limit`): streams opened together carry the same bytes, and
  with one limit they would all reopen in the same moment, a storm of new
  connections every few minutes. A stream ends before ``response_limit``,
  never after. A router whose ``draw_response_limit`` setting is false (the
  conformance services: the SockJS suite counts the bytes a stream carries)
  ends every stream at exactly ``response_limit``.
* The client sends nothing on a stream: what it sends is read and dropped.
  Its end, before the body's, closes the session (1002 "Connection
  interrupted", as sockjs-tornado closes it).
* Protocol fixes over sockjs-tornado (docs/protocol.rst, Conformance) hold here:
  ``no-transform`` caching headers, an exact eventsource type, a validated
  htmlfile callback, and frames inside ``<script>`` that no message can end.
"""

import random
from typing import NamedTuple, Optional

from sockjs.tornado import transports as base
from sockjs.tornado.session import ConnectionInfo
from sockjs.tornado.transports.htmlfile import HTMLFILE_HEAD
from tornado.ioloop import IOLoop
from tornado.iostream import StreamClosedError

from broker import _internals
from broker.protocol import frames
from broker.protocol.batch import Streamed
from broker.protocol.close_codes import INTERRUPTED
from broker.transports.http_transports import NewSessions, ServiceHeaders, callback_name
from broker.transports.owned_socket import OwnedSocket, opening_info

# What an xhr-streaming response opens with (protocol 0.3.3): 2 KiB that push
# old browsers' XHR into streaming mode.
XHR_STREAMING_PRELUDE = "h" * 2048 + "\n"


class Opening(NamedTuple):
    """What a stream takes from the request that opened it."""

    transport: str
    """A key of :data:`broker.protocol.frames.STREAM_FRAMINGS`."""
    chunked: bool
    """Whether the body is chunked (HTTP/1.1)."""
    info: ConnectionInfo
    """The request's connection info, which a new session takes whole (lean once open)."""
    client: Optional[str]
    """The address the connection limits count the session under, if any."""


class Stream(OwnedSocket):
    """One streaming response after its head, opened by ``opening`` (an
    :class:`Opening`): the session's handler."""

    __slots__ = ("name", "client", "_chunked", "_left", "_ending", "_info")

    active = True

    def __init__(self, router, sock, release, opening):
        super().__init__(router, sock, release)
        self.name = opening.transport
        self.client = opening.client
        self._chunked = opening.chunked
        limit = router.settings["response_limit"]
        self._left = drawn_limit(limit) if router.settings["draw_response_limit"] else limit
        self._ending = False
        self._info = opening.info

    @property
    def form(self):
        """The wire form of a batch on this stream (see :mod:`broker.protocol.batch`)."""
        return Streamed(self.name, self._chunked)

    # What the SockJS session calls.

    def get_conn_info(self):
        return self._info

    def send_pack(self, message, binary=False):
        """The session's own frames, even past ``max_buffer``: a slow consumer
        still gets told why it is dropped."""
        data = frames.stream_frame(self.name, message, self._chunked)
        self.write_unbounded(data)
        self._count(data)

    def session_closed(self):
        self.end()

    # What the broker calls.

    def join(self, session_id):
        """Serve the session ``session_id``, opening it if new."""
        router = self.router
        session = router.get_session(session_id)
        if session is None:
            session = router.create_session(session_id)
        if not session.set_handler(self, False):
            self.end()  # the session has written why
            return
        self.session = session
        self._info = None  # a new session keeps no more than the address and path (BrokerSession)
        session.verify_state()
        if self.session is not None:
            session.start_heartbeat()
            session.flush()
            self._deliver_to(session, self)

    def write_batch(self, data, key):
        """Send ``data``, a batch in this stream's form (of a conflating ``key``),
        counted against the response limit; False when over ``max_buffer``."""
        if not OwnedSocket.write_batch(self, data, key):
            return False
        self._count(data)
        return True

    def end(self):
        """Leave the session, end the body, and close once it is written."""
        self.leave_session()
        if self.write_last(frames.LAST_CHUNK if self._chunked else b"") and not self.behind:
            self.cut()

    def leave_session(self):
        session = self.session
        if session is not None:
            self._deliver_to(session, None)
            super().leave_session()

    @staticmethod
    def _deliver_to(session, stream):
        """Have the session's connection take the room's batches through
        ``stream``, or through the session's queue (None), if it takes them."""
        deliver = getattr(session.conn, "deliver_through", None)
        if deliver is not None:
            deliver(stream)

    # The event loop's side.

    def received(self, data):
        pass

    def caught_up(self):
        if self._last_written:
            self.cut()

    def ended(self):
        session = self.session
        if session is not None:
            self.leave_session()
            session.close(*INTERRUPTED)

    def _count(self, data):
        """Count the body bytes ``data`` carries (its chunk's size line and end
        not among them, as SockJS counts) against the response limit; past it,
        end on the next turn (never inside the room's flush: see
        :meth:`broker.core.hub.Hub.move`)."""
        self._left -= frames.chunk_size(data) if self._chunked else len(data)
        if self._left <= 0 and not self._ending:
            self._ending = True
            IOLoop.current().add_callback(self.end)


def drawn_limit(limit, draw=random.random):
    """A stream's response limit: between half of ``limit`` and all of it."""
    return int(limit * (1 + draw()) / 2)


class _StreamOpening(NewSessions, ServiceHeaders):
    """Mixin for the streaming transports' request handlers: the head and
    prelude, then the socket to a :class:`Stream` (see the module's rules)."""

    def ends_with_connection(self):
        """Whether the body ends with its connection even for HTTP/1.1, unchunked."""
        return False

    async def start_stream(self, session_id, content_type, prelude):
        self.preflight()
        self.handle_session_cookie()
        self.disable_cache()
        self.set_header("Content-Type", content_type)
        request = self.request
        _internals.close_after_response(request)
        chunked = request.version == "HTTP/1.1"
        if chunked and self.ends_with_connection():
            _internals.unchunked_response(request)
            self.set_header("Connection", "close")
            chunked = False
        opening = Opening(self.name, chunked, opening_info(request), self.client)
        self.write(prelude)
        try:
            await self.flush()
        except StreamClosedError:
            return
        connection = self.detach()
        if connection.closed():
            self.server.stats.on_conn_closed()
            return
        # The conformance services run on Tornado's own streams, without limits.
        release = connection.release_function() if hasattr(connection, "release_function") else None
        sock, _ = _internals.take_socket(connection)
        Stream(self.server, sock, release, opening).join(session_id)


class XhrStreamingTransport(_StreamOpening, base.XhrStreamingTransport):
    async def post(self, session_id):
        await self.start_stream(session_id, "application/javascript; charset=UTF-8", XHR_STREAMING_PRELUDE)


class EventSourceTransport(_StreamOpening, base.EventSourceTransport):
    """EventSource, served as exactly ``text/event-stream`` (UTF-8 by definition)."""

    async def get(self, session_id):
        await self.start_stream(session_id, "text/event-stream", "\r\n")


class HtmlFileTransport(_StreamOpening, base.HtmlFileTransport):
    """Streaming into a hidden iframe; the page calls ``parent.<callback>``. Its body
    ends with its connection, unchunked (see the module's rules)."""

    def ends_with_connection(self):
        return not self.server.settings.get("chunked_htmlfile", False)

    async def get(self, session_id):
        callback = callback_name(self)
        if callback is None:
            return
        self.set_header("X-Content-Type-Options", "nosniff")
        frame_ancestors = self.server.rules.origins.frame_ancestors()
        if frame_ancestors:
            self.set_header("Content-Security-Policy", frame_ancestors)
        await self.start_stream(session_id, "text/html; charset=UTF-8", HTMLFILE_HEAD % callback)
