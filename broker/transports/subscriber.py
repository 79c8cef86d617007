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
* A connection is in the rooms its URL names (:mod:`broker.protocol.room_names`):
  none named, the default room (``node.hub``), exactly as before rooms; one,
  that room, in the same forms; several, each through a :class:`Membership`
  in that room's :class:`broker.protocol.batch.InRoom` form, whose conflating
  keys are its room's. It leaves them all as it closes. A name, or a number of
  names, the rule refuses closes it at open (``ROOM_REFUSED``); so does a room
  the broker cannot make (``TOO_MANY_ROOMS`` past ``--max-rooms``).
* Private rooms (``--private-rooms``, the rules' ``private_rooms``): a session
  whose URL names one is opened, and counted in the limits, but joins nothing
  until its first message, which must be its token (:func:`broker.protocol.tokens.token_in`),
  valid and naming every private room it asked for: then it joins them all, as
  any session does (resuming where its URL says); else it is closed
  (``TOKEN_REQUIRED``, ``TOKEN_REFUSED``, ``TOKEN_EXPIRED``), as is one that sent
  none within ``TOKEN_WAIT_S`` (:mod:`broker.core.session_tokens`). A later token
  refreshes it: the same subject, naming every private room it holds; its ``exp``
  replaces the last. Its ``exp`` passing closes it (``TOKEN_EXPIRED``). A public
  session may send tokens too, each checked (a bad one closes it), and is never
  closed for their ``exp``.
* A token is checked as it comes and never published, whatever the session (in
  feed mode, of several rooms); a message that is no token costs one
  ``startswith``. A broker without a token key refuses a token
  (``TOKEN_REFUSED``): it would otherwise relay a page's credential to its room. Tokens count in ``--client-rate``
  as messages do, once the session joined. What a page sends in its one
  private room is published only if its token's ``publish`` names the room;
  otherwise it is dropped, and counted. Refusals are logged (INFO, at a bounded
  rate as every line) with why, never with the token.
"""

import logging
import time

from sockjs.tornado import SockJSConnection

from broker.core.broker_shapes import in_broker_shape
from broker.core.limits import MAX_SESSIONS, SESSIONS_PER_IP
from broker.core.rooms import RoomRefused, RoomsFull
from broker.core.seams import RelayUnavailable
from broker.core.token_bucket import TokenBucket
from broker.protocol import close_codes, frames, room_names, tokens
from broker.protocol.batch import InRoom, Positioned

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
    form, and resumes from the position it gives, in each of its rooms (see the
    module's rules). One in several rooms only listens: what it sends is dropped,
    and counted (``multiplexed_sends_dropped``)."""

    hub = None
    counted = False
    positioned = False
    memberships = ()
    bucket = None
    # With a token key: the node's verifier. A session of private rooms: their names, and
    # until its token came, the rooms it asked for (and a stream serving it meanwhile).
    verifier = None
    private = ()
    awaiting = None
    stream = None
    grant = None
    # In its one private room, its token not letting it publish there: what it sends is dropped.
    listens_only = False

    def on_open(self, info):
        session = self.session
        server = session.server
        handler = session.handler
        self.transport = session.transport_name
        prebuilt = getattr(handler, "prebuilt_form", None)
        try:
            joining = room_names.requested(info.arguments, server.rules.max_session_rooms)
        except ValueError as error:
            LOG.debug("refused a %s session: %s", self.transport, error)
            session.close(*close_codes.ROOM_REFUSED)
            return
        request = joining.requests[0]
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
        # Its websocket, or its session (see the module's rules). (Keeping a
        # bound method of its own would make a reference cycle, which a frozen
        # heap keeps until an audit: see broker.ops.gc_policy.)
        self.writer = handler if prebuilt is not None else session
        self.verifier = server.node.verifier
        patterns = server.rules.private_rooms
        self.private = tuple(name for name in joining.names if patterns and tokens.matches(patterns, name))
        if self.private:
            self.awaiting = joining
            server.node.tokens.wait(self, time.monotonic())
            return
        self._join(joining)

    def _join(self, joining):
        """Join the rooms of ``joining`` (a :class:`broker.protocol.room_names.Joining`);
        False once the session is closed for a room refused."""
        server = self.session.server
        hubs = self._rooms(server.node.rooms, joining.names)
        if hubs is None:
            return False
        rate = server.rules.client_rate
        self.bucket = TokenBucket(rate, 2 * rate, time.monotonic()) if rate else None
        if len(hubs) == 1:
            self.hub = hubs[0]
            self.hub.subscribe(self, joining.requests[0].since)
        else:
            inner = self.form.inner if self.positioned else self.form
            self.memberships = tuple(Membership(self, hub, inner) for hub in hubs)
            for membership, each in zip(self.memberships, joining.requests):
                membership.hub.subscribe(membership, each.since)
        if server.node.ages is not None:
            server.node.ages.add(self, time.monotonic())
        stream, self.stream = self.stream, None
        if stream is not None:
            self.deliver_through(stream)
        return True

    def _rooms(self, held, names):
        """The rooms of ``names`` (none: the default room) in ``held`` (a
        :class:`broker.core.rooms.Rooms`), or None once the session is closed for a room refused."""
        if not names:
            return [self.session.server.node.hub]
        try:
            if held is None:
                raise RoomRefused("this broker serves the default room only")
            return held.joined(names)
        except RoomRefused as error:
            LOG.debug("refused a %s session: %s", self.transport, error)
            self.session.close(*(close_codes.TOO_MANY_ROOMS if isinstance(error, RoomsFull)
                                 else close_codes.ROOM_REFUSED))
            return None

    def wrapped(self, inner, room):
        """The form of this connection in ``room`` (one of several), its transport's being ``inner``."""
        form = InRoom(room, inner)
        return Positioned(form) if self.positioned else form

    def on_message(self, message):
        if self.session.is_closed or self.took_token(message):
            return
        if self.memberships:
            self.session.server.node.rooms.multiplexed_dropped += 1
            return
        if self.listens_only:
            self.session.server.node.tokens.sends_dropped += 1
            return
        if not isinstance(message, str):
            # Only a backend (or the broker: {"audience": N}) speaks in other JSON values.
            LOG.debug("closing %s session: a message that is not a string", self.transport)
            self.session.close(*close_codes.NOT_A_STRING)
            return
        if self._over_rate():
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

    def _over_rate(self):
        """True when this message is over ``client_rate``: the session is then dropped
        (``TOO_MANY_MESSAGES``), its websocket or stream cut at once."""
        if self.bucket is None or self.bucket.take(time.monotonic()):
            return False
        LOG.debug("closing %s session: over %g messages/s", self.transport, self.bucket.rate)
        handler = self.session.handler
        subscriber = self if self.hub is not None else self.memberships[0]
        subscriber.hub.drop(subscriber, close_codes.TOO_MANY_MESSAGES)
        if (self.form.inner if self.positioned else self.form) is not None:
            handler.cut()  # a websocket or a stream: its socket is the broker's
        return True

    def took_token(self, message):
        """Whether ``message`` was this session's business with its token: a token (checked,
        never published), or anything else from a session waiting for its first, which closes
        it (see the module's rules)."""
        if type(message) is str and message.startswith(tokens.MESSAGE_PREFIX):
            if self.verifier is None:
                self._close_for_token(close_codes.TOKEN_REFUSED, "this broker has no token key")
            elif not self._over_rate():
                self._take_token(message)
            return True
        if self.awaiting is not None:
            self._close_for_token(close_codes.TOKEN_REQUIRED, "its first message is not a token")
            return True
        return False

    def _take_token(self, message):
        """Check the token of ``message``: join the rooms awaited, or refresh; or close the session."""
        try:
            grant = self.verifier.verify(tokens.token_in(message))
            if self.grant is not None and grant.subject != self.grant.subject:
                raise tokens.TokenRefused("another subject than the session's token's")
            for name in self.private:
                if not grant.may_join(name):
                    raise tokens.TokenRefused("it does not name room %s" % name)
        except tokens.TokenRefused as error:
            expired = isinstance(error, tokens.TokenExpired)
            self._close_for_token(close_codes.TOKEN_EXPIRED if expired else close_codes.TOKEN_REFUSED, error)
            return
        node = self.session.server.node
        joining, self.awaiting = self.awaiting, None
        if joining is not None:
            if node.drain is not None and node.drain.draining:
                self.session.close(*close_codes.RECONNECT)
                return
            if not self._join(joining):
                return
        if self.grant is None:
            node.tokens.accepted += 1
        else:
            node.tokens.refreshed += 1
        self.grant = grant
        if self.private:
            node.tokens.hold(self, grant.expires)
            self.listens_only = self.hub is not None and not grant.may_publish(self.hub.name)

    def _close_for_token(self, close, why):
        """Close the session for its token with ``close``, counted; ``why`` is logged, never the token."""
        LOG.info("closed a %s session for its token (%d): %s", self.transport, close.code, why)
        self.session.server.node.tokens.refuse(close)
        self.session.close(*close)

    def on_close(self):
        if self.private:
            self.session.server.node.tokens.forget(self)
        memberships, self.memberships = self.memberships, ()
        for membership in memberships:
            membership.hub.unsubscribe(membership)
        if self.hub is not None or memberships:
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
        if self.awaiting is not None:
            self.stream = stream  # it joins through it, if its token comes meanwhile
            return
        inner = None if stream is None else stream.form
        for membership in self.memberships:
            old_form = membership.form
            membership.form = self.wrapped(inner, membership.hub.name)
            membership.through = self.writer if stream is None else stream
            membership.hub.move(membership, old_form, membership)
        if self.hub is not None:
            old_form = self.form
            self.form = None if stream is None else stream.form
            if self.positioned:
                self.form = Positioned(self.form)
            self.hub.move(self, old_form, self.writer if stream is None else stream)


class Membership:
    """A connection in several rooms, in one of them (``hub``), its transport's form
    ``inner``: the room's :class:`broker.core.seams.Subscriber` for it, and its writer, writing
    ``through`` the connection's and keeping each conflating key its room's
    (the same key in two rooms is two keys)."""

    __slots__ = ("connection", "hub", "form", "through", "transport", "_scope")

    def __init__(self, connection, hub, inner):
        self.connection = connection
        self.hub = hub
        self.form = connection.wrapped(inner, hub.name)
        self.through = connection.writer
        self.transport = connection.transport
        self._scope = hub.name + " "

    @property
    def writer(self):
        return self

    def write_batch(self, data, key):
        return self.through.write_batch(data, key if key is None else self._scope + key)

    def disconnect(self, code, reason):
        self.connection.disconnect(code, reason)


class FeedConnection(BroadcastConnection):
    """A listener only (``--no-client-publish``): what the client sends is dropped, but its
    token, which is taken as in any session."""

    def on_message(self, message):
        if not self.session.is_closed:
            self.took_token(message)
