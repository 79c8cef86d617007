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
In a cluster (``backplane`` given) the answer waits until the message is in
Redis's stream; while the backplane is not up, publish and health answer 503
with the reason. A request with an ``Idempotency-Key`` publishes once within
the window (:mod:`broker.core.idempotency`); one with ``?key=NAME`` publishes
the latest value of a conflating key (:mod:`broker.core.conflation`); one with
``?key=NAME&op=add`` (or ``op=max``) and an amount as its body changes the
counter NAME (:mod:`broker.core.counters`): in a room alone here, in a cluster
by the backplane's script, in Redis. Its answer adds the total after it
(``"value"``); a retry with its ``Idempotency-Key`` changes nothing and gets
that answer again.
"""

import hmac
import json
import time

from tornado.httputil import responses
from tornado.web import RequestHandler

from broker.core import broker_shapes, conflation, counters, figures, idempotency
from broker.core.seams import RelayUnavailable
from broker.ops import catalogue
from broker.protocol import frames

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
    def initialize(self, node, token, max_message_size):
        self.hub = node.hub
        self.backplane = node.backplane
        self.idempotency = node.idempotency
        self.token = token.encode() if token else None
        self.max_message_size = max_message_size

    async def post(self):
        if self.refused(self.token, "publish", ("publishing", "--publish-token")):
            return
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
            return await self._count(conflating, operation, text, idempotency_key)
        content_type = self.request.headers.get("Content-Type", "")
        is_json = content_type.split(";")[0].strip().lower() == "application/json"
        try:
            message = frames.decode_json(text) if is_json else text
        except ValueError as error:
            return self.reply(400, {"error": "body is not JSON: %s" % error})
        if broker_shapes.in_broker_shape(message):
            return self.reply(422, {"error": broker_shapes.REFUSAL})
        try:
            if idempotency_key is None:
                answer = await self._publish(message, conflating)
            else:
                answer = await self._publish_once(message, conflating, idempotency_key,
                                                  idempotency.fingerprint(body, is_json, conflating))
        except RelayUnavailable as error:
            return self.unavailable(error)
        except frames.MessageTooBig as error:
            return self.reply(413, {"error": "message over %d bytes: %s" % (self.max_message_size, error)})
        except ValueError as error:
            return self.reply(400, {"error": "not a publishable message: %s" % error})
        if answer is not None:
            self.reply(200, answer)

    async def _publish(self, message, conflating):
        recipients = self.hub.publish(message, key=conflating)
        offset = self.hub.pending_offset() if self.backplane is None else await self.backplane.written()
        return {"recipients": recipients, "position": {"epoch": self.hub.epoch, "offset": offset}}

    async def _publish_once(self, message, conflating, idempotency_key, fingerprint):
        """The answer to a publish with an ``idempotency_key``: the first
        answer again for a retry; None once it refused a key reused."""
        window = self.idempotency
        if self.backplane is None:
            now = time.monotonic()
            kept = window.get(idempotency_key, now)
            if kept is None:
                recipients = self.hub.publish(message, key=conflating)
                kept = idempotency.Answer(fingerprint, recipients, self.hub.epoch, self.hub.pending_offset())
                window.put(idempotency_key, kept, now)
                return kept.body()
        else:
            first = idempotency.Answer(fingerprint, len(self.hub), self.hub.epoch, None)
            self.hub.publish(message, (idempotency_key, first.record(), window.seconds), conflating)
            appended, text = await self.backplane.written()
            if appended:
                self.hub.appended()
                return first._replace(offset=text).body()
            kept = idempotency.Answer.parse(text)
        return self._again(kept, fingerprint)

    async def _count(self, name, operation, text, idempotency_key):
        """Answer a counter ``operation`` (``add``, ``max``) with the amount ``text`` on
        counter ``name``, once for an ``idempotency_key`` (see :mod:`broker.core.counters`)."""
        if name is None:
            return self.reply(400, {"error": "?%s=%s changes a counter: name it with ?%s=NAME"
                                    % (counters.QUERY, operation, conflation.QUERY)})
        fingerprint = idempotency.fingerprint(self.request.body, False, operation + " " + name)
        try:
            given = counters.amount(text)
            answer = await (self._count_alone if self.backplane is None else self._count_in_cluster)(
                name, operation, given, idempotency_key, fingerprint)
        except RelayUnavailable as error:
            return self.unavailable(error)
        except ValueError as error:
            return self.reply(400, {"error": "counter %s not changed: %s" % (name, error)})
        if answer is not None:
            self.reply(200, answer)

    async def _count_alone(self, name, operation, given, idempotency_key, fingerprint):
        now = time.monotonic()
        kept = None if idempotency_key is None else self.idempotency.get(idempotency_key, now)
        if kept is not None:
            return self._again(kept, fingerprint)
        recipients, value = self.hub.count(name, operation, given)
        answer = idempotency.Answer(fingerprint, recipients, self.hub.epoch, self.hub.pending_offset(), value)
        if idempotency_key is not None:
            self.idempotency.put(idempotency_key, answer, now)
        return answer.body()

    async def _count_in_cluster(self, name, operation, given, idempotency_key, fingerprint):
        first = idempotency.Answer(fingerprint, len(self.hub), self.hub.epoch, None)
        idempotent = None if idempotency_key is None else (idempotency_key, first.record(), self.idempotency.seconds)
        self.backplane.count(name, operation, given, idempotent)
        outcome, text = await self.backplane.written()
        if outcome == counters.REFUSED:
            raise ValueError(text)
        if outcome == counters.SEEN:
            return self._again(idempotency.Answer.parse(text), fingerprint)
        if outcome == counters.APPENDED:
            self.hub.appended()
        offset, value = text.split(" ")
        return first._replace(offset=offset, value=value).body()

    def _again(self, kept, fingerprint):
        """The answer ``kept`` for a retry with its idempotency key, or None once it
        refused the key used with another request (``fingerprint``)."""
        if kept.fingerprint != fingerprint:
            self.idempotency.refused += 1
            self.reply(422, {"error": "this %s was used with another request" % idempotency.HEADER})
            return None
        self.idempotency.replayed += 1
        self.set_header(idempotency.REPLAYED_HEADER, "true")
        return kept.body()


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
