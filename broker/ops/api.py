"""HTTP endpoints for backends and operators: publish, stats, health, drain.

``POST /publish`` takes one message per request. The body is the message: with
``Content-Type: application/json`` it is parsed and published as that JSON
value, otherwise it is published as a UTF-8 string; either in the broker's own
shape (:mod:`broker.core.broker_shapes`) is refused with 422. A body over
``--max-message-size``, or a message whose JSON text as the room keeps it
(SockJS's escapes included) is over it, answers 413. The answer gives the
recipients at this broker and the message's position. The token is compared in
constant time; with no token configured the endpoint answers 404, never open.
``POST /admin/drain`` takes its own token, the admin token, never the publish
token: a backend that may publish may not stop brokers.
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
import time

from tornado.httputil import responses
from tornado.web import RequestHandler

from broker.core import broker_shapes, conflation, counters, figures, idempotency
from broker.core.engines import CounterChange, Once, PublishRequest
from broker.core.rooms import RoomRefused, RoomsFull
from broker.core.seams import RelayUnavailable
from broker.ops import catalogue
from broker.protocol import frames, room_names

# A publish refused because the backplane could not take it: when to try again.
RETRY_AFTER_S = 1


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

    def refused(self, token, realm, disabled):
        """Answer and return True unless the request carries ``token`` (bytes)
        as its bearer token; without a token the endpoint is ``disabled``: a
        pair, what is disabled and the flag that would enable it (what the 404 says)."""
        if token is None:
            self.reply(404, {"error": "%s over HTTP is disabled: start the broker with %s" % disabled})
            return True
        scheme, _, offered = self.request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not offered:
            self.set_header("WWW-Authenticate", 'Bearer realm="%s"' % realm)
            self.reply(401, {"error": "missing bearer token"})
            return True
        if not hmac.compare_digest(offered.strip().encode(), token):
            self.reply(403, {"error": "wrong token"})
            return True
        return False

    def write_error(self, status_code, **kwargs):
        self.finish(json.dumps({"error": responses.get(status_code, "Unknown")}) + "\n")


class PublishHandler(_JSONHandler):
    """``POST /publish`` (see the module's rules): the request, checked, published through the
    node's :class:`broker.core.engines.Engine`, whichever it is."""

    def initialize(self, node, token, max_message_size):
        self.hub = node.hub
        self.rooms = node.rooms
        self.engine = node.engine
        self.token = token.encode() if token else None
        self.max_message_size = max_message_size

    async def post(self):
        if self.refused(self.token, "publish", ("publishing", "--publish-token")):
            return
        try:
            room = room_names.room_of(self.get_query_arguments(room_names.QUERY_ROOM))
        except ValueError as error:
            return self.reply(400, {"error": "?%s=: %s" % (room_names.QUERY_ROOM, error)})
        request = self._request()
        if request is None:
            return
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
    token): drain as SIGTERM does (see :mod:`broker.core.drain`); asking again
    changes nothing. Without an admin token the endpoint answers 404, and a
    broker drains by signal only."""

    def initialize(self, node, token):
        self.drain = node.drain
        self.token = token.encode() if token else None

    def post(self):
        if self.refused(self.token, "admin", ("draining", "--admin-token")):
            return
        if not self.drain.draining:
            self.drain.request()
        self.reply(202, self.drain.stats())
