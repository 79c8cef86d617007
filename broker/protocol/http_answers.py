"""The broker's answers to a poll and a send, stated once: status, headers and body, without I/O.

A poll (xhr, jsonp) and a send (xhr_send, jsonp_send) are answered on two
paths: by Tornado's request handler (a connection's first poll, a request
with ``Connection: close``, anything over TLS, a send the broker does not
take itself: :mod:`broker.transports.polling`,
:mod:`broker.transports.http_transports`), and by the broker on a kept-alive
connection (:class:`broker.transports.polling.KeptAliveConnection`). Both
take the answer from here: changing how a poll or a send is answered is
changing this module.

Rules this module keeps:

* Each answer is an :class:`AnswerForm` (:data:`XHR_POLL_ANSWER`,
  :data:`JSONP_POLL_ANSWER`, :data:`XHR_SEND_ANSWER`,
  :data:`JSONP_SEND_ANSWER`, :data:`TOO_BIG_SEND_ANSWER`): its status, and its headers in the order
  Tornado writes them; :data:`DATE`, :data:`CORS` and :data:`CONTENT_LENGTH`
  stand for what each answer fills in. Its body is made here too
  (:func:`xhr_poll_body`, :func:`jsonp_poll_body`, :data:`XHR_SEND_BODY`,
  :data:`JSONP_SEND_BODY`, :data:`TOO_BIG_SEND_BODY`).
* The kept-alive path writes :meth:`AnswerForm.answer`, the whole answer
  as bytes, formatted from templates made once; Tornado's handler sets
  :meth:`AnswerForm.headers` and the same body, and adds only what Tornado
  adds to every answer: ``Server``, its ``Date``, ``Connection: close`` when
  it closes, and on a service with JSESSIONID cookies (the conformance
  services, which keep no connection) ``Set-Cookie``.
* Every answer is uncacheable and untransformable (:data:`NO_CACHE`): a
  proxy that transformed one would break streaming and JSONP.
* The CORS headers (:func:`cors_headers`) are for a page the router's origin
  policy allows, which the caller has checked: ``*`` without ``Origin``, the
  page's origin with credentials with it, and ``Vary: Origin`` either way.
* A poll's body is its one frame: a line for xhr, for jsonp a
  ``/**/callback("frame");`` script that no message can end (the leading
  comment and ``nosniff`` keep a browser from sniffing it as anything but a
  script: the Rosetta Flash defence).
"""

from http import HTTPStatus

from broker.protocol.frames import script_string

NO_CACHE = "no-store, no-cache, no-transform, must-revalidate, max-age=0"
SCRIPT = "application/javascript; charset=UTF-8"
PLAIN_TEXT = "text/plain; charset=UTF-8"
VARY = ("Vary", "Origin")
ANY_ORIGIN = (VARY, ("Access-Control-Allow-Origin", "*"))

# What an answer of a form fills in, where it stands among the form's headers.
DATE = "Date"
"""The answer's ``Date``: the writer's."""
CORS = "CORS"
"""The CORS headers for the request's ``Origin`` (:func:`cors_headers`)."""
CONTENT_LENGTH = "Content-Length"
"""The body's length."""
_SLOTS = (DATE, CORS, CONTENT_LENGTH)
# An origin standing in a template for the one each answer names.
_ORIGIN_SLOT = "\0"


def cors_headers(origin):
    """The CORS headers, (name, value) pairs, of an answer to a request from
    ``origin`` (None: none named), which the router's origin policy allows."""
    if origin is None:
        return ANY_ORIGIN
    return VARY, ("Access-Control-Allow-Origin", origin), ("Access-Control-Allow-Credentials", "true")


def _lines(headers):
    return "".join("%s: %s\r\n" % header for header in headers).replace("%", "%%")


class AnswerForm:
    """One kind of answer: ``status``, and ``headers``, (name, value) pairs and
    the slots :data:`DATE`, :data:`CORS`, :data:`CONTENT_LENGTH`, in that
    order among themselves."""

    __slots__ = ("status", "reason", "_declared", "_cors", "_sized", "_any_origin", "_named_origin")

    def __init__(self, status, *headers):
        slots = [header for header in headers if isinstance(header, str)]
        if DATE not in slots or slots != [slot for slot in _SLOTS if slot in slots]:
            raise ValueError("an answer's slots are Date, then CORS, then Content-Length: %r" % (slots,))
        self.status = status
        self.reason = HTTPStatus(status).phrase
        self._declared = headers
        self._cors = CORS in slots
        self._sized = CONTENT_LENGTH in slots
        self._any_origin = self._template(None)
        self._named_origin = self._template(_ORIGIN_SLOT)

    def _template(self, origin):
        """The head as a %-template of its date, ``origin``'s slot if it has one, its length."""
        parts = ["HTTP/1.1 %d %s\r\n" % (self.status, self.reason)]
        for header in self._declared:
            if header == DATE:
                parts.append("Date: %s\r\n")
            elif header == CORS:
                parts.append(_lines(cors_headers(origin)).replace(_ORIGIN_SLOT, "%s"))
            elif header == CONTENT_LENGTH:
                parts.append("Content-Length: %d\r\n")
            else:
                parts.append(_lines((header,)))
        return "".join(parts) + "\r\n"

    def headers(self, origin, length):
        """Its headers but ``Date``, (name, value) pairs, for a request from
        ``origin`` (see :func:`cors_headers`) and a body of ``length`` bytes."""
        headers = []
        for header in self._declared:
            if header == CORS:
                headers.extend(cors_headers(origin))
            elif header == CONTENT_LENGTH:
                headers.append((CONTENT_LENGTH, str(length)))
            elif header != DATE:
                headers.append(header)
        return headers

    def answer(self, date, origin, body):
        """The whole answer (bytes) carrying ``body`` (bytes), dated ``date``
        (HTTP's form), to a request from ``origin`` (see :func:`cors_headers`)."""
        if origin is not None and self._cors:
            head = self._named_origin % ((date, origin, len(body)) if self._sized else (date, origin))
        else:
            head = self._any_origin % ((date, len(body)) if self._sized else (date,))
        return head.encode("latin-1") + body


XHR_POLL_ANSWER = AnswerForm(200, ("Content-Type", SCRIPT), DATE, CORS, ("Cache-Control", NO_CACHE), CONTENT_LENGTH)
JSONP_POLL_ANSWER = AnswerForm(200, ("Content-Type", SCRIPT), DATE, ("Cache-Control", NO_CACHE),
                               ("X-Content-Type-Options", "nosniff"), CONTENT_LENGTH)
XHR_SEND_ANSWER = AnswerForm(204, DATE, CORS, ("Cache-Control", NO_CACHE), ("Content-Type", PLAIN_TEXT))
JSONP_SEND_ANSWER = AnswerForm(200, ("Content-Type", PLAIN_TEXT), DATE, CORS, ("Cache-Control", NO_CACHE),
                               CONTENT_LENGTH)
TOO_BIG_SEND_ANSWER = AnswerForm(413, ("Content-Type", PLAIN_TEXT), DATE, CORS, ("Cache-Control", NO_CACHE),
                                 CONTENT_LENGTH)
XHR_SEND_BODY = b""
"""The body of an xhr_send's answer: none."""
JSONP_SEND_BODY = b"ok"
"""The body of a jsonp_send's answer."""
TOO_BIG_SEND_BODY = b"Message too big."
"""The body of the answer to a send over ``--max-message-size`` (its body, or a message as the room keeps it)."""


def xhr_poll_body(frame):
    """An xhr poll's body: ``frame`` (str), the one SockJS frame it carries, on a line."""
    return (frame + "\n").encode()


def jsonp_poll_body(callback, frame):
    """A jsonp poll's body: a script giving ``frame`` (str) to the page's function ``callback``."""
    return ("/**/%s(%s);\r\n" % (callback, script_string(frame))).encode()
