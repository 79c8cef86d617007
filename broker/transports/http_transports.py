"""sockjs-tornado's send handlers, with the broker's fixes, and what every HTTP transport shares.

Each handler class here replaces the sockjs-tornado handler it subclasses,
for every router the broker builds (see
``broker.transports.router.TRANSPORT_OVERRIDES``), so the production broker
and the conformance services share one code path. The streaming, polling
and websocket transports are the broker's own, on sockets taken from Tornado
(:mod:`broker.transports.streams`, :mod:`broker.transports.polling`,
:mod:`broker.transports.websocket`).

Protocol fixes: where sockjs-tornado 1.0.7 on Tornado 6 departs from the
SockJS protocol (as its test suite, sockjs-protocol, defines it), the classes
here and in those modules follow the protocol: ``no-transform`` caching
headers, validated callback names, ``/**/``-prefixed JSONP and one frame per
poll. docs/protocol.rst (Conformance) has the list.
"""

import math
import time

from sockjs.tornado import transports as base

from broker.protocol import http_answers, sends
from broker.protocol.polls import CALLBACK_NAME
from broker.protocol.close_codes import MESSAGE_TOO_BIG
from broker.transports.owned_socket import opening_info

# What a session refused as it would open is told (see refuse_new_session).
DRAINING = "Server draining: connect to another\n"
DRAINING_RETRY_S = 1
TOO_MANY_NEW_SESSIONS = "Too many new sessions: retry later\n"


class ServiceHeaders:
    """Mixin for the SockJS service's HTTP handlers: caching and cross-origin
    headers, and the answers to polls and sends, as
    :mod:`broker.protocol.http_answers` states them.

    Uncacheable responses also forbid proxies to transform them
    (``no-transform``), which would break streaming and JSONP. CORS answers
    name the requesting origin, with credentials, only where the router's
    origin policy allows it; a browser then refuses the answer to any other.
    """

    def disable_cache(self):
        self.set_header("Cache-Control", http_answers.NO_CACHE)

    def preflight(self):
        origin = self.request.headers.get("Origin")
        allowed = origin is None or self.server.rules.origins.allows(origin, self.request.host)
        for name, value in http_answers.cors_headers(origin) if allowed else (http_answers.VARY,):
            self.set_header(name, value)
        headers = self.request.headers.get("Access-Control-Request-Headers")
        if headers:
            self.set_header("Access-Control-Allow-Headers", headers)

    def give(self, form, body):
        """Answer as ``form`` (a :class:`broker.protocol.http_answers.AnswerForm`)
        states, with ``body`` (bytes): the status, headers and body the broker
        writes on a kept-alive connection; Tornado adds ``Server``, ``Date``
        and any cookie. The request's ``Origin`` is one the policy allows: one
        it does not is refused before (:func:`refuse_foreign_origin`)."""
        self.clear()
        self.set_status(form.status)
        for name, value in form.headers(self.request.headers.get("Origin"), len(body)):
            self.set_header(name, value)
        if body:
            self.write(body)


def refuse_new_session(handler, take):
    """From ``prepare``: answer 503 with ``Retry-After`` if ``handler``'s request
    would open a session (one that does not exist yet, or a raw websocket) while
    the broker takes none, before anything of the session is made; Tornado then
    calls no handler method. It takes none while it drains (a proxy in front,
    told so, asks another broker: the shipped haproxy config retries a 503), or
    while its limits admit none (``--max-accept-rate``, see
    :mod:`broker.core.limits`). ``take``: the request opens it (False for
    ``/info``, which only checks)."""
    server = handler.server
    node = server.node
    draining = node.drain is not None and node.drain.draining
    if (node.limits is None and not draining) or handler.request.method == "OPTIONS":
        return
    session_id = handler.path_kwargs.get("session_id")
    if session_id is not None and server.get_session(session_id) is not None:
        return
    if draining:
        node.drain.refused += 1
        wait, reason = DRAINING_RETRY_S, DRAINING
    else:
        wait = node.limits.admit_new_session(time.monotonic(), take)
        if wait is None:
            return
        reason = TOO_MANY_NEW_SESSIONS
    handler.set_status(503)
    handler.set_header("Retry-After", str(max(1, math.ceil(wait))))
    handler.set_header("Content-Type", "text/plain; charset=UTF-8")
    handler.finish(reason)


FOREIGN_ORIGIN = "Origin not allowed.\n"


def refuse_foreign_origin(handler):
    """From ``prepare``: answer 403 to a request that names in ``Origin`` a page the router's
    origin policy (``--allowed-origins``) does not allow, before anything of a session is made
    or a message taken, and say whether it did. A browser sends a page's plain ``POST`` to any
    site without asking; CORS only keeps the page from reading the answer. Requests without
    ``Origin`` (backends, tools, a script tag's ``GET``) are never refused for it."""
    origin = handler.request.headers.get("Origin")
    if origin is None or handler.server.rules.origins.allows(origin, handler.request.host):
        return False
    handler.set_status(403)
    handler.set_header("Content-Type", "text/plain; charset=UTF-8")
    handler.finish(FOREIGN_ORIGIN)
    return True


class NewSessions:
    """Mixin for the handlers whose requests open sessions, and for ``/info``
    (``opens_session`` False): see :func:`refuse_foreign_origin` and
    :func:`refuse_new_session`."""

    opens_session = True

    @property
    def client(self):
        """The address the connection limits count this request's session under, if any."""
        return getattr(self.request.connection.stream, "client", None)

    def get_conn_info(self):
        """What a session this request opens starts with: never its cookies (see
        :func:`broker.transports.owned_socket.opening_info`)."""
        return opening_info(self.request)

    def prepare(self):
        super().prepare()
        if not refuse_foreign_origin(self):
            refuse_new_session(self, self.opens_session)


class _SendHandler(ServiceHeaders):
    """xhr_send and jsonp_send: a JSON array of messages for an open session.
    On the broker's plain connections, the sends it takes are answered without
    Tornado (:mod:`broker.transports.polling`); this handler answers the rest.

    403 for a page of an origin not allowed (:func:`refuse_foreign_origin`);
    404 for an unknown or closed session; a body over ``max_message_size``, or
    a message over it as the room keeps it (its JSON text, escaped), closes the
    session and answers 413; an empty body, or JSON that is not an
    array, answers 500 "Payload expected."; bad JSON or bad UTF-8, 500
    "Broken JSON encoding.". Nothing else of the session is touched.
    """

    def prepare(self):
        super().prepare()
        refuse_foreign_origin(self)

    def post(self, session_id):
        self.preflight()
        self.handle_session_cookie()
        self.disable_cache()
        session = self.server.get_session(session_id)
        if session is None or session.is_closed:
            self.set_status(404)
            return
        if len(self.request.body) > self.server.rules.max_message_size:
            session.close(*MESSAGE_TOO_BIG)
            self.give(http_answers.TOO_BIG_SEND_ANSWER, http_answers.TOO_BIG_SEND_BODY)
            return
        try:
            messages = sends.messages_of(self.payload())
        except ValueError as error:
            self._answer(500, str(error))
            return
        if session.take_send(messages):
            self.accepted()
        else:
            self.give(http_answers.TOO_BIG_SEND_ANSWER, http_answers.TOO_BIG_SEND_BODY)

    def payload(self):
        return self.request.body

    def _answer(self, status, text):
        self.set_status(status)
        self.set_header("Content-Type", "text/plain; charset=UTF-8")
        self.write(text)


class XhrSendHandler(_SendHandler, base.XhrSendHandler):
    """Its 204 keeps ``Content-Type: text/plain``: without one, Firefox parses
    the empty answer as XML and logs an error (Tornado drops the header as it
    finishes a 204; it is put back)."""

    def accepted(self):
        self.give(http_answers.XHR_SEND_ANSWER, http_answers.XHR_SEND_BODY)

    def flush(self, include_footers=False):
        if self.get_status() == 204:
            self.set_header("Content-Type", http_answers.PLAIN_TEXT)
        return super().flush(include_footers)


class JSONPSendHandler(_SendHandler, base.JSONPSendHandler):
    """The body is the JSON itself, or a form whose ``d`` field holds it."""

    def payload(self):
        return sends.jsonp_payload(self.request.body, self.request.headers.get("Content-Type"))

    def accepted(self):
        self.give(http_answers.JSONP_SEND_ANSWER, http_answers.JSONP_SEND_BODY)


def callback_name(handler):
    """The validated name in the ``c`` parameter of ``handler``'s request (jsonp,
    htmlfile): the page's JavaScript function that receives the frames; None
    once a 500 has been sent. A name outside ``[A-Za-z0-9_.]`` is refused, never
    used as given nor rewritten."""
    callback = handler.get_argument("c", None, strip=False)
    if not callback:
        error = '"callback" parameter required'
    elif not CALLBACK_NAME.match(callback):
        error = 'invalid "callback" parameter'
    else:
        return callback
    handler.set_status(500)
    handler.set_header("Content-Type", "text/plain; charset=UTF-8")
    handler.finish(error)
    return None
