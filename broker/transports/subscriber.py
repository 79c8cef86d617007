"""A client's connection to the room: the room's subscriber, whatever its transport.

sockjs-tornado makes one connection object for each SockJS session (the
router's ``connection``: :class:`BroadcastConnection`, or
:class:`FeedConnection` where browsers only listen); it is the room's
:class:`broker.core.seams.Subscriber` while its session is open. Rules this
module keeps:

* Its writer (:class:`broker.core.seams.Writer`) is its websocket itself
  (:class:`broker.transports.owned_socket.OwnedSocket`), which takes the
  room's prebuilt frames, or else its session
  (:class:`broker.transports.session.BrokerSession`), whose queue the polls
  and streams take; while a stream serves a session, the room writes to the
  stream straight (:meth:`BroadcastConnection.deliver_through`).
* What a client sends is checked here before it costs anything else: its
  rate, its type, its shape, its size (see :class:`BroadcastConnection`).
"""

import logging
import time

from sockjs.tornado import SockJSConnection

from broker.core.broker_shapes import in_broker_shape
from broker.core.limits import MAX_SESSIONS, SESSIONS_PER_IP
from broker.core.seams import RelayUnavailable
from broker.core.token_bucket import TokenBucket
from broker.protocol import close_codes, frames, positions
from broker.protocol.batch import Positioned

# The name its lines have always been logged under.
LOG = logging.getLogger("broker.transports.router")

SESSION_REFUSALS = {
    SESSIONS_PER_IP: close_codes.SESSIONS_PER_IP,
    MAX_SESSIONS: close_codes.MAX_SESSIONS,
}


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
        # Its websocket, or its session (see the module's rules). (Keeping a
        # bound method of its own would make a reference cycle, which a frozen
        # heap keeps until an audit: see broker.ops.gc_policy.)
        self.writer = handler if prebuilt is not None else session
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
        its form, or through its session again (None)."""
        if self.hub is not None:
            old_form = self.form
            self.form = None if stream is None else stream.form
            if self.positioned:
                self.form = Positioned(self.form)
            self.hub.move(self, old_form, self.writer if stream is None else stream)


class FeedConnection(BroadcastConnection):
    """A listener only (``--no-client-publish``): what the client sends is dropped."""

    def on_message(self, message):
        pass
