"""A long poll on a kept-alive connection, read and answered as bytes, without I/O.

A polling client sends the same request again and again on one keep-alive
connection: xhr-polling ``POST <prefix>/<server>/<session>/xhr`` with no
body, jsonp-polling ``GET <prefix>/<server>/<session>/jsonp?c=<callback>``.
The broker answers such a request itself (:mod:`broker.transports.polling`);
anything else on the connection is Tornado's, unread.

Rules this module keeps:

* :func:`poll_of` recognises a poll only when it is sure: its head is one
  :func:`broker.protocol.request_heads.read_head` has read, without a body (a
  ``Content-Length`` but 0), its request line an xhr or jsonp poll of a path
  the router's route matches, and for jsonp with a valid callback name (the
  last ``c`` of the query, as Tornado takes it). The rest of a query is the
  session's business only as it opens (its positions: the shipped client asks
  on every request), and a poll of an open session does not read it, nor does
  Tornado's handler. Anything else is None: the request goes to Tornado as it
  was sent.
* :func:`poll_answer` is the complete ``200`` answer to a poll, with the
  headers Tornado's handler sends (less ``Server``): for xhr, the CORS headers
  for the request's ``Origin``, which the caller has checked against its
  policy; for jsonp, none, and ``nosniff`` on the script.
"""

import re
from typing import NamedTuple, Optional

from broker.protocol.frames import script_string
from broker.protocol.request_heads import session_path

# The callback names a jsonp or htmlfile page may give (``c``); others are refused.
CALLBACK_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")

_POLL_METHODS = {b"POST": "xhr", b"GET": "jsonp"}
CACHE_CONTROL = "Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
_XHR_HEAD = ("HTTP/1.1 200 OK\r\n"
             "Content-Type: application/javascript; charset=UTF-8\r\n"
             "Date: %s\r\n"
             "Vary: Origin\r\n"
             "%s" + CACHE_CONTROL +
             "Content-Length: %d\r\n"
             "\r\n")
_JSONP_HEAD = ("HTTP/1.1 200 OK\r\n"
               "Content-Type: application/javascript; charset=UTF-8\r\n"
               "Date: %s\r\n" + CACHE_CONTROL +
               "X-Content-Type-Options: nosniff\r\n"
               "Content-Length: %d\r\n"
               "\r\n")
ANY_ORIGIN = "Access-Control-Allow-Origin: *\r\n"


class Poll(NamedTuple):
    """A poll read from a connection."""

    transport: str
    """``xhr`` or ``jsonp``: the SockJS session's transport name."""
    session_id: str
    size: int
    """How many bytes of the connection it takes: its head."""
    origin: Optional[str]
    """Its ``Origin`` header, if any."""
    host: str
    """Its ``Host`` header."""
    callback: Optional[str] = None
    """A jsonp poll's callback name."""
    named_client: Optional[str] = None
    """The value of the client address header asked for, if any."""


def poll_of(head, prefix):
    """The :class:`Poll` whose head is ``head`` (a
    :class:`broker.protocol.request_heads.RequestHead`), for a router at ``prefix``;
    None if it may be anything else (see the rules)."""
    if head.content_length:
        return None
    transport = _POLL_METHODS.get(head.method)
    if transport is None:
        return None
    target = session_path(head.target, prefix, transport)
    if target is None:
        return None
    session_id, query = target
    callback = None
    if transport == "jsonp":
        callbacks = [value for name, _, value in (pair.partition("=") for pair in query.split("&")) if name == "c"]
        if not callbacks or not CALLBACK_NAME.match(callbacks[-1]):
            return None
        callback = callbacks[-1]
    return Poll(transport, session_id, head.size, head.origin, head.host, callback, head.named_client)


def cors_headers(origin):
    """The CORS headers of an answer to a request from ``origin`` (None:
    none named), which the router's origin policy allows."""
    if origin is None:
        return ANY_ORIGIN
    return "Access-Control-Allow-Origin: %s\r\nAccess-Control-Allow-Credentials: true\r\n" % origin


def poll_answer(poll, frame, date):
    """The whole answer (bytes) to ``poll`` carrying the SockJS ``frame`` (str),
    dated ``date`` (HTTP's form)."""
    if poll.transport == "jsonp":
        body = ("/**/%s(%s);\r\n" % (poll.callback, script_string(frame))).encode()
        head = _JSONP_HEAD % (date, len(body))
    else:
        body = (frame + "\n").encode()
        head = _XHR_HEAD % (date, cors_headers(poll.origin), len(body))
    return head.encode("latin-1") + body
