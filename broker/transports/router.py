"""The sockjs-tornado integration: the broadcast connection, its session, the router.

``BrokerRouter`` is sockjs-tornado's router with every handler it serves
swapped for the broker's version in ``broker.transports.http_transports``, so all routers the
broker builds (the production ``/broadcast`` and the conformance services)
run the same fixed transports.
"""

import logging
import time

from sockjs.tornado import SockJSConnection, SockJSRouter, session
from sockjs.tornado import static as stock_static
from sockjs.tornado import transports as stock
from sockjs.tornado.proto import HEARTBEAT
from sockjs.tornado.util import bytes_to_str

from broker.core.broker_shapes import in_broker_shape
from broker.core.conflation import bound, replace_queued
from broker.core.figures import GAUGE, Figure, Metric
from broker.core.hub import DISCONNECTS
from broker.core.limits import MAX_SESSIONS, SESSIONS_PER_IP
from broker.core.node import ClientRules, Node
from broker.core.seams import RelayUnavailable
from broker.core.token_bucket import TokenBucket
from broker.protocol import close_codes, frames, positions
from broker.protocol.batch import Positioned
from broker.transports import http_transports, polling, service_pages, streams, websocket
from broker.transports.owned_socket import lean_connection_info

TRANSPORT_OVERRIDES = {
    stock.WebSocketTransport: websocket.WebSocketTransport,
    stock.RawWebSocketTransport: websocket.RawWebSocketTransport,
    stock.XhrSendHandler: http_transports.XhrSendHandler,
    stock.JSONPSendHandler: http_transports.JSONPSendHandler,
    stock.XhrPollingTransport: polling.XhrPollingTransport,
    stock.XhrStreamingTransport: streams.XhrStreamingTransport,
    stock.EventSourceTransport: streams.EventSourceTransport,
    stock.HtmlFileTransport: streams.HtmlFileTransport,
    stock.JSONPTransport: polling.JSONPTransport,
    stock_static.InfoHandler: service_pages.InfoHandler,
    stock_static.IFrameHandler: service_pages.IFrameHandler,
}

LOG = logging.getLogger("broker.transports.router")

SESSION_REFUSALS = {
    SESSIONS_PER_IP: close_codes.SESSIONS_PER_IP,
    MAX_SESSIONS: close_codes.MAX_SESSIONS,
}

DEFAULT_SETTINGS = {
    "jsessionid": False,
    "verify_ip": False,
    # Each stream ends at a limit drawn below response_limit (broker.transports.streams).
    "draw_response_limit": True,
}


class BrokerRouter(SockJSRouter):
    """A SockJS router serving the broker's transports: its clients held to
    ``rules`` (a :class:`broker.core.node.ClientRules`), its sessions served by
    ``node``'s parts (a :class:`broker.core.node.Node`): the room they join,
    the limits that admit them, the drain that turns them away, the wheels
    that ping and heartbeat them.
    ``behind`` holds the websockets holding bytes the kernel would not take
    yet, and :meth:`unsent_bytes` adds up those bytes.
    """

    FIGURES = (
        Figure("sessions", "stats.sess_active", Metric("sessions", GAUGE, "SockJS sessions alive (a polling session "
                                                       "counts until it expires)")),
        Figure("ping_timeout_disconnects", "node.ping_timeouts", DISCONNECTS, ("ping_timeout",)),
        Figure("slow_consumers.behind", lambda router: len(router.behind),
               Metric("connections_behind", GAUGE, "Websockets and streams holding bytes the kernel would not "
                      "take yet")),
        Figure("slow_consumers.unsent_bytes", lambda router: router.unsent_bytes(),
               Metric("unsent_bytes", GAUGE, "Bytes the websockets and streams behind hold for their clients")),
        Figure("slow_consumers.max_buffer", "rules.max_buffer"),
        Figure("slow_consumers.write_timeout_s", "rules.write_timeout"),
    )

    def __init__(self, connection, prefix, settings=None, rules=ClientRules(), node=None):
        merged = dict(DEFAULT_SETTINGS)
        merged.update(settings or {})
        super().__init__(connection, prefix, merged, session_kls=BrokerSession)
        self.prefix = prefix
        self.rules = rules
        self.node = node if node is not None else Node()
        self.behind = set()

    def unsent_bytes(self):
        """Bytes the websockets behind hold for their clients, each at most
        ``max_buffer`` and a frame."""
        return sum(handler.unsent_bytes() for handler in self.behind)

    @property
    def urls(self):
        """sockjs-tornado's routes, each handler replaced by the broker's own."""
        return [(pattern, TRANSPORT_OVERRIDES.get(handler, handler), kwargs)
                for pattern, handler, kwargs in super().urls]

    def apply_routes(self, routes):
        routes.extend(self.urls)
        return routes


class BrokerSession(session.Session):
    """A SockJS session whose send queue is a list of encoded chunks, and whose
    heartbeats come from the router's heartbeat wheel.

    A polling session between two requests queues every batch. sockjs-tornado
    queues in one string, which copies itself on every append (quadratic in
    what is waiting, up to ``max_buffer``); a list appends in constant time and
    is joined once, by the next request. ``queued_bytes`` is what waits.

    sockjs-tornado starts a timer object for each handler a session serves (a
    websocket, or a request of a poll or stream), and a new timer handle every
    delay. With a wheel (the router's ``heartbeats``) the session is a member
    instead, from ``start_heartbeat`` (a handler attached) to
    ``stop_heartbeat`` (it detached, which closing the session makes it do); a
    heartbeat that finds no handler attached ends the membership too.

    Once open, a session keeps of its first request only the address and path
    (:func:`broker.transports.owned_socket.lean_connection_info`), whatever
    its transport, refused or not: not the headers and arguments, up to 64 KB
    a session for as long as it lives.
    """

    def __init__(self, conn, server, session_id, expiry=None):
        super().__init__(conn, server, session_id, expiry)
        self.send_queue = []
        self.queued_bytes = 0
        self.keyed = None

    def verify_state(self):
        opening = self.state == session.CONNECTING
        super().verify_state()
        if opening and self.conn_info is not None:
            self.conn_info = lean_connection_info(self.conn_info)

    def start_heartbeat(self):
        wheel = self.server.node.heartbeats
        if wheel is None:
            super().start_heartbeat()
        else:
            # Joining again restarts the delay, as a new timer would.
            wheel.discard(self)
            wheel.add(self)

    def stop_heartbeat(self):
        wheel = self.server.node.heartbeats
        if wheel is None:
            super().stop_heartbeat()
        else:
            wheel.discard(self)

    def heartbeat_due(self):
        if self.handler is None:
            self.stop_heartbeat()
        else:
            self.handler.send_pack(HEARTBEAT)

    def take_send(self, messages):
        """Take the ``messages`` of a send (xhr_send, jsonp_send) of this open
        session; False if one was too big for the room, which closed the session
        (``MESSAGE_TOO_BIG``): the send is then answered 413, as one over the size."""
        self.on_messages(messages)
        return not (self.is_closed and self.close_reason == close_codes.MESSAGE_TOO_BIG)

    def send_batch(self, batch, key=None):
        """Send a hub batch, its ``a[...]`` frame built once for all sessions;
        one of a conflating ``key`` replaces the one still queued under it
        (:mod:`broker.core.conflation`)."""
        self._send(batch.sockjs_frame, batch.sockjs_body, key)

    def send_jsonified(self, msg, stats=True):
        msg = bytes_to_str(msg)
        self._send("a[" + msg + "]", msg)
        if stats:
            self.stats.on_pack_sent(1)

    def _send(self, frame, body, key=None):
        handler = self.handler
        if handler is not None and handler.active and not self.send_queue:
            handler.send_pack(frame)
            return
        if key is None:
            self.send_queue.append(body)
            self.queued_bytes += len(body)
        else:
            if self.keyed is None:
                self.keyed = {}
            body = _KeyedBody(body)
            replaced = replace_queued(self.send_queue, self.keyed, key, body)
            self.queued_bytes += len(body) - (len(replaced) if replaced is not None else 0)
        self.flush()

    def flush(self):
        if self.handler is None or not self.handler.active or not self.send_queue:
            return
        body = ",".join(self.send_queue)
        self.send_queue = []
        self.queued_bytes = 0
        self.keyed = None
        self.handler.send_pack("a[" + body + "]")


class _KeyedBody(str):
    """A keyed message's body in a session's queue: an object of its own, which
    the queue finds again by identity (CPython shares one-character strings)."""

    __slots__ = ()


class BroadcastConnection(SockJSConnection):
    """One client in the room: a hub subscriber for as long as its session is
    open; one that publishes faster than the router's ``client_rate`` is
    dropped, and its websocket, if it has one, cut at once. A polling or
    streaming session the router's limits refuse is closed as it opens
    (``SESSION_REFUSALS``), and never subscribed; so is any session that opens
    while the broker drains (``RECONNECT``). A client's message is a JSON
    string (sockjs-client sends nothing else); any other JSON value closes its
    session (``NOT_A_STRING``), so that no client can pass for a backend or
    for the broker's own announcements; so does a string whose text is in the
    broker's own shape (``BROKER_SHAPE``, :mod:`broker.core.broker_shapes`),
    which the plain websocket would send as the broker's bytes. One whose JSON
    text, escaped as the room keeps it, is over ``--max-message-size`` closes
    it too (``MESSAGE_TOO_BIG``), whatever the size of what the client sent.

    A client that asks for positions (:mod:`broker.protocol.positions`, in
    its URL's query) is subscribed in a :class:`broker.protocol.batch.Positioned`
    form, and resumes from the position it gives."""

    hub = None
    counted = False
    positioned = False

    def on_open(self, info):
        session = self.session
        server = session.server
        handler = session.handler
        self.transport = session.transport_name
        prebuilt = getattr(handler, "prebuilt_form", None)
        request = positions.requested(info.arguments)
        self.positioned = request.positions
        self.form = Positioned(prebuilt) if request.positions else prebuilt
        if server.node.drain is not None and server.node.drain.draining:
            session.close(*close_codes.RECONNECT)
            return
        if prebuilt is None and server.node.limits is not None:
            # A websocket is counted as the connection it is; a session of
            # requests is counted on its own, for the client of this first one.
            self.client = handler.client
            refusal = server.node.limits.admit_session(self.client)
            if refusal is not None:
                LOG.debug("refused a %s session of %s: %s", self.transport, self.client, refusal)
                session.close(*SESSION_REFUSALS[refusal])
                return
            self.counted = True
        self.hub = server.node.hub
        if prebuilt is not None:
            self.write = handler.write_prebuilt
        rate = server.rules.client_rate
        self.bucket = TokenBucket(rate, 2 * rate, time.monotonic()) if rate else None
        self.hub.subscribe(self, request.since)
        if server.node.ages is not None:
            server.node.ages.add(self, time.monotonic())

    def on_message(self, message):
        if self.session.is_closed:
            return
        if not isinstance(message, str):
            # Only a backend (or the broker: {"audience": N}) speaks in other JSON values.
            LOG.debug("closing %s session: a message that is not a string", self.transport)
            self.session.close(*close_codes.NOT_A_STRING)
            return
        if self.bucket is not None and not self.bucket.take(time.monotonic()):
            LOG.debug("closing %s session: over %g messages/s", self.transport, self.bucket.rate)
            handler = self.session.handler
            self.hub.drop(self, close_codes.TOO_MANY_MESSAGES)
            if (self.form.inner if self.positioned else self.form) is not None:
                handler.cut()  # a websocket or a stream: its socket is the broker's
            return
        if in_broker_shape(message):
            LOG.debug("closing %s session: a message in the broker's own shape", self.transport)
            self.session.close(*close_codes.BROKER_SHAPE)
            return
        try:
            self.hub.publish(message)
        except RelayUnavailable as error:
            LOG.debug("dropped a %s message: %s", self.transport, error)
        except frames.MessageTooBig as error:
            LOG.debug("closing %s session: %s", self.transport, error)
            self.session.close(*close_codes.MESSAGE_TOO_BIG)
        except ValueError as error:
            LOG.debug("closing %s session: %s", self.transport, error)
            self.session.close(*close_codes.INVALID_MESSAGE)

    def on_close(self):
        if self.hub is not None:
            self.hub.unsubscribe(self)
            ages = self.session.server.node.ages
            if ages is not None:
                ages.discard(self)
        if self.counted:
            self.counted = False
            self.session.server.node.limits.release_session(self.client)

    def disconnect(self, code, reason):
        self.session.close(code, reason)

    def deliver_through(self, stream):
        """Take the room's batches straight through ``stream`` (a
        :class:`broker.transports.streams.Stream` now serving this session) in
        its form, or through :meth:`write` again (None)."""
        if self.hub is not None:
            old_form = self.form
            self.form = None if stream is None else stream.form
            if self.positioned:
                self.form = Positioned(self.form)
            self.hub.move(self, old_form, self.write if stream is None else stream.write_framed)

    def write(self, batch, key=None):
        """Polling and streaming sessions: the batch through the session queue,
        to the poll or stream attached, if any, or to the next one. (A stream
        takes later batches straight, see :meth:`deliver_through`.) A
        websocket's connection has its handler's prebuilt writer instead, set
        as it opens. (Keeping a bound method of its own on the connection would
        make a reference cycle, which a frozen heap keeps until an audit: see
        broker.ops.gc_policy.)"""
        session = self.session
        if session.queued_bytes > bound(session.server.rules.max_buffer, key):
            return False
        session.send_batch(batch, key)
        return True


class FeedConnection(BroadcastConnection):
    """A listener only (``--no-client-publish``): what the client sends is dropped."""

    def on_message(self, message):
        pass
