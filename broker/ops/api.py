"""HTTP endpoints for backends and operators: publish, stats, health, drain.

``POST /publish`` takes one message per request. The body is the message: with
``Content-Type: application/json`` it is parsed and published as that JSON
value, otherwise it is published as a UTF-8 string; either in the broker's own
shape (:mod:`broker.core.broker_shapes`) is refused with 422. A body over
``--max-message-size``, or a message whose JSON text as the room keeps it
(SockJS's escapes included) is over it, answers 413. The answer gives the
recipients at this broker and the message's position.

Its bearer token (``Authorization: Bearer``) is one of the static publish tokens
(``--publish-token``: one, or two while rotating), every right, or, with a token key
(``--token-secret``, ``--token-public-key``), a JWT (:mod:`broker.protocol.tokens`)
whose ``publish`` scope names the room of a publish, plain or keyed, and whose
``count`` scope the room of a counter's change (``op=add``, ``op=max``). Each static
token is compared in constant time, every one of them always; a JWT is verified once
a request, only when no static token matched. A JWT that does not verify (forged,
expired, of no key here) answers 401 and one out of its scope 403, each with
``WWW-Authenticate`` saying so (RFC 6750: ``invalid_token``,
``insufficient_scope``), its body why, never the token; a room out of scope is
never made. Without a token key, a wrong token answers 403; with neither a
publish token nor a token key the endpoint answers 404, never open.
``POST /admin/drain`` takes its own token, the admin token, never the publish
token nor a JWT: a backend that may publish may not stop brokers.
A publish is a typed request to the node's Engine (:mod:`broker.core.engines`),
in memory for a broker alone, through Redis in a cluster: the handler checks
the request, builds it, and turns the result or the refusal into the answer,
never asking which Engine it has. In a cluster the answer waits until the
message is in Redis's stream; while the backplane is not up, publish and
health answer 503 with the reason. A request with an ``Idempotency-Key``
publishes once within the window (:mod:`broker.core.idempotency`); one with
``?key=NAME`` publishes the latest value of a conflating key
(:mod:`broker.core.conflation`); one with ``?key=NAME&op=add`` (or ``op=max``)
and an amount as its body changes the counter NAME (:mod:`broker.core.counters`).
Its answer adds the total after it (``"value"``); a retry with its
``Idempotency-Key`` changes nothing and gets that answer again.
``?room=NAME`` publishes in that room (:mod:`broker.protocol.room_names`), made if the
broker holds none, its keys, counters and idempotency keys its own; without it, in
the default room. A bad name answers 400 with the rule, a new room past
``--max-rooms`` 429.
"""

import hmac
import json
import logging
import math
import time

from tornado.httputil import responses
from tornado.web import RequestHandler

from broker.core import broker_shapes, conflation, counters, figures, idempotency
from broker.core.engines import CounterChange, Once, PublishRequest
from broker.core.rooms import RoomRefused, RoomsFull
from broker.core.seams import RelayUnavailable
from broker.ops import catalogue
from broker.protocol import frames, room_names, tokens

LOG = logging.getLogger("broker.ops.api")

# A publish refused because the backplane could not take it: when to try again.
RETRY_AFTER_S = 1
# What a static token (--publish-token, --admin-token) lets its bearer do: everything.
EVERY_RIGHT = tokens.Grant("a static token", math.inf, (tokens.ANY,), (tokens.ANY,), (tokens.ANY,))


def static_tokens(text):
    """The bytes of each token of a token flag's value ``text``: one, or two separated by a
    space while rotating; none for None."""
    return tuple(token.encode() for token in text.split(" ")) if text else ()


class _JSONHandler(RequestHandler):
    def set_default_headers(self):
        self.set_header("Content-Type", "application/json; charset=UTF-8")
        self.set_header("Cache-Control", "no-store")

    def reply(self, status, body):
        self.set_status(status)
        self.finish(json.dumps(body, separators=(",", ":")) + "\n")

    def unavailable(self, error):
        """503 for a publish the cluster's backplane could not take (``error``); a retry
        a second later may succeed (Redis back, a failover over)."""
        self.set_header("Retry-After", str(RETRY_AFTER_S))
        self.reply(503, {"error": str(error)})

    def bearer(self, realm, disabled, static, verifier=None):
        """What the request's bearer token lets it do (a :class:`broker.protocol.tokens.Grant`):
        every right for one of the ``static`` tokens (bytes; each compared, every time), or,
        with a ``verifier``, the grant of the JWT it verifies. None once it answered why
        nothing: 404 without a static token or a verifier (``disabled``: a pair, what is
        disabled and the flags that would enable it), 401 without a bearer token or for a JWT
        that does not verify, 403 for a wrong token where no JWT is taken."""
        if not static and verifier is None:
            self.reply(404, {"error": "%s over HTTP is disabled: start the broker with %s" % disabled})
            return None
        scheme, _, offered = self.request.headers.get("Authorization", "").partition(" ")
        offered = offered.strip()
        if scheme.lower() != "bearer" or not offered:
            self.set_header("WWW-Authenticate", 'Bearer realm="%s"' % realm)
            self.reply(401, {"error": "missing bearer token"})
            return None
        given = offered.encode()
        matched = False
        for token in static:
            matched |= hmac.compare_digest(given, token)
        if matched:
            return EVERY_RIGHT
        if verifier is None:
            self.reply(403, {"error": "wrong token"})
            return None
        try:
            return verifier.verify(offered)
        except tokens.TokenRefused as error:
            LOG.info("%s refused a token from %s: %s", realm, self.request.remote_ip, error)
            self.set_header("WWW-Authenticate", 'Bearer realm="%s", error="invalid_token"' % realm)
            self.reply(401, {"error": "invalid token: %s" % error})
            return None

    def write_error(self, status_code, **kwargs):
        self.finish(json.dumps({"error": responses.get(status_code, "Unknown")}) + "\n")


class PublishHandler(_JSONHandler):
    """``POST /publish`` (see the module's rules): the request, checked, published through the
    node's :class:`broker.core.engines.Engine`, whichever it is."""

    def initialize(self, node, token, verifier, max_message_size):
        self.hub = node.hub
        self.rooms = node.rooms
        self.engine = node.engine
        self.tokens = static_tokens(token)
        self.verifier = verifier
        self.max_message_size = max_message_size

    async def post(self):
        grant = self.bearer("publish", ("publishing", "--publish-token, --token-secret or --token-public-key"),
                            self.tokens, self.verifier)
        if grant is None:
            return
        try:
            room = room_names.room_of(self.get_query_arguments(room_names.QUERY_ROOM))
        except ValueError as error:
            return self.reply(400, {"error": "?%s=: %s" % (room_names.QUERY_ROOM, error)})
        request = self._request()
        if request is None:
            return
        out_of_scope = None if grant is EVERY_RIGHT else _out_of_scope(grant, room, request)
        if out_of_scope:
            self.set_header("WWW-Authenticate", 'Bearer realm="publish", error="insufficient_scope"')
            return self.reply(403, {"error": out_of_scope})
        try:
            hub = self.rooms.room(room) if room else self.hub
        except RoomsFull as error:
            return self.reply(429, {"error": "room %s not made: %s" % (room, error)})
        except RoomRefused as error:
            return self.reply(400, {"error": "room %s not made: %s" % (room, error)})
        try:
            result = await self.engine.publish(hub, request)
        except RelayUnavailable as error:
            return self.unavailable(error)
        except idempotency.KeyReused as error:
            return self.reply(422, {"error": str(error)})
        except frames.MessageTooBig as error:
            return self.reply(413, {"error": "message over %d bytes: %s" % (self.max_message_size, error)})
        except ValueError as error:
            if request.counter is not None:
                return self.reply(400, {"error": "counter %s not changed: %s" % (request.counter.name, error)})
            return self.reply(400, {"error": "not a publishable message: %s" % error})
        if result.replayed:
            self.set_header(idempotency.REPLAYED_HEADER, "true")
        self.reply(200, result.body())

    def _request(self):
        """The :class:`broker.core.engines.PublishRequest` the request makes, or None once it
        answered why it makes none."""
        body = self.request.body
        if not body:
            return self.reply(400, {"error": "empty body: the body is the message"})
        if len(body) > self.max_message_size:
            return self.reply(413, {"error": "message over %d bytes" % self.max_message_size})
        idempotency_key = self.request.headers.get(idempotency.HEADER)
        if idempotency_key is not None and not idempotency.valid_key(idempotency_key):
            return self.reply(400, {"error": "%s: 1 to %d printable ASCII characters"
                                    % (idempotency.HEADER, idempotency.MAX_KEY_LENGTH)})
        conflating = self.get_query_argument(conflation.QUERY, None)
        if conflating is not None and not conflation.valid_key(conflating):
            return self.reply(400, {"error": "?%s=: 1 to %d printable ASCII characters, no space"
                                    % (conflation.QUERY, conflation.MAX_KEY_LENGTH)})
        try:
            operation = counters.operation(self.get_query_argument(counters.QUERY, None))
        except ValueError as error:
            return self.reply(400, {"error": str(error)})
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError:
            return self.reply(400, {"error": "body is not UTF-8"})
        if operation != "set":
            return self._counter_change(conflating, operation, text, idempotency_key)
        content_type = self.request.headers.get("Content-Type", "")
        is_json = content_type.split(";")[0].strip().lower() == "application/json"
        try:
            message = frames.decode_json(text) if is_json else text
        except ValueError as error:
            return self.reply(400, {"error": "body is not JSON: %s" % error})
        if broker_shapes.in_broker_shape(message):
            return self.reply(422, {"error": broker_shapes.REFUSAL})
        return PublishRequest(message, conflating, once=self._once(idempotency_key, is_json, conflating))

    def _counter_change(self, name, operation, text, idempotency_key):
        """The request of a counter ``operation`` (``add``, ``max``) with the amount ``text``
        on counter ``name`` (see :mod:`broker.core.counters`), or None once it answered why not."""
        if name is None:
            return self.reply(400, {"error": "?%s=%s changes a counter: name it with ?%s=NAME"
                                    % (counters.QUERY, operation, conflation.QUERY)})
        try:
            given = counters.amount(text)
        except ValueError as error:
            return self.reply(400, {"error": "counter %s not changed: %s" % (name, error)})
        return PublishRequest(counter=CounterChange(name, operation, given),
                              once=self._once(idempotency_key, False, operation + " " + name))

    def _once(self, idempotency_key, is_json, conflating):
        """The request's :class:`broker.core.engines.Once` (its body ``is_json`` or not, of the
        conflating key ``conflating``), or None without an ``idempotency_key``."""
        if idempotency_key is None:
            return None
        return Once(idempotency_key, idempotency.fingerprint(self.request.body, is_json, conflating))


def _out_of_scope(grant, room, request):
    """Why ``grant`` does not let its bearer make ``request`` in ``room`` (``""``: the default
    room), or None when it does: a counter's change needs its ``count`` scope, any other
    publish its ``publish`` scope."""
    where = "room %s" % room if room else "the default room"
    if request.counter is not None:
        if not grant.may_count(room):
            return "this token may not change counters in %s: its count scope does not name it" % where
    elif not grant.may_publish(room):
        return "this token may not publish in %s: its publish scope does not name it" % where
    return None


class StatsHandler(_JSONHandler):
    """The figures every part of the broker states (:mod:`broker.core.figures`), each at
    its place, in the catalogue's order (:mod:`broker.ops.catalogue`): the hub's counters,
    the SockJS sessions alive (an abandoned polling session counts until it expires), the
    websockets holding back bytes, how many bytes, and the bounds that cut them
    (``slow_consumers``), the open TCP connections and refusals (``limits``), the
    collector policy's counters (on PyPy with the GC's heap and its nursery), on PyPy the
    JIT's parameters and, in a cluster, the backplane's state."""

    def initialize(self, node, router):
        self.node = node
        self.router = router

    def get(self):
        self.reply(200, figures.document(catalogue.parts(self.node, self.router)))


class HealthHandler(_JSONHandler):
    """200 "ok" when a message would get through now; 503 "draining" while the broker drains;
    503 "unavailable", with the reason, while its backplane is down or its Redis refuses writes
    for memory, or its event loop lagged: it keeps its clients, and should get no new ones;
    503 "stalled", with the reason, while its own writes do not come back through its read
    loop: its clients get nothing, and a proxy should move them (:mod:`broker.core.liveness`)."""

    def initialize(self, node):
        self.drain = node.drain
        self.backplane = node.backplane
        self.liveness = node.liveness

    def get(self):
        if self.drain.draining:
            return self.reply(503, {"status": "draining"})
        now = time.monotonic()
        unavailable = self.backplane.state.unavailable if self.backplane is not None else None
        if unavailable is None and self.liveness is not None:
            unavailable = self.liveness.lagging(now)
        if unavailable:
            return self.reply(503, {"status": "unavailable", "reason": unavailable})
        stalled = self.liveness.stalled(now) if self.liveness is not None else None
        if stalled:
            return self.reply(503, {"status": "stalled", "reason": stalled})
        self.reply(200, {"status": "ok"})


class DrainHandler(_JSONHandler):
    """``POST /admin/drain`` (the admin token, ``--admin-token``; never the publish
    token, nor a JWT): drain as SIGTERM does (see :mod:`broker.core.drain`); asking again
    changes nothing. Without an admin token the endpoint answers 404, and a
    broker drains by signal only."""

    def initialize(self, node, token):
        self.drain = node.drain
        self.tokens = static_tokens(token)

    def post(self):
        if self.bearer("admin", ("draining", "--admin-token"), self.tokens) is None:
            return
        if not self.drain.draining:
            self.drain.request()
        self.reply(202, self.drain.stats())
