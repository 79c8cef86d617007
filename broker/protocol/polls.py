"""A long poll on a kept-alive connection, read and answered as bytes, without I/O.

A polling client sends the same request again and again on one keep-alive
connection: xhr-polling ``POST <prefix>/<server>/<session>/xhr`` with no
body, jsonp-polling ``GET <prefix>/<server>/<session>/jsonp?c=<callback>``.
The broker answers such a request itself (:mod:`broker.transports.polling`);
anything else on the connection is Tornado's, unread.

Rules this module keeps:

* :func:`parse_poll` recognises a poll only when it is sure: the whole head is
  in the bytes given, the request line is an xhr or jsonp poll of a path the
  router's route matches, in HTTP/1.1, with no ``%``-escape anywhere, and for
  jsonp a valid callback name (the last ``c`` of the query, as Tornado takes
  it). The rest of a query is the session's business only as it opens (its
  positions: the shipped client asks on every request), and a poll of an open
  session does not read it, nor does Tornado's handler. Every line
  ends in CRLF, no header is folded or holds a control character but a tab,
  ``Host`` is given (once), and no header asks for what the answer would have
  to honour: a body (a ``Content-Length`` but 0, any
  ``Transfer-Encoding``), ``Expect``, ``Connection: close``, ``Upgrade``, or a
  CORS preflight's ``Access-Control-Request-Headers``; nor a trusted proxy's
  client address header more than once. Anything else is None: the request
  goes to Tornado as it was sent.
* :func:`poll_answer` is the complete ``200`` answer to a poll, with the
  headers Tornado's handler sends (less ``Server``): for xhr, the CORS headers
  for the request's ``Origin``, which the caller has checked against its
  policy; for jsonp, none, and ``nosniff`` on the script.
"""

import re
from typing import NamedTuple, Optional

from broker.protocol.frames import script_string

END_OF_HEAD = b"\r\n\r\n"
# A head this long or longer is not a poll's: Tornado reads it.
MAX_HEAD_BYTES = 8192
# The callback names a jsonp or htmlfile page may give (``c``); others are refused.
CALLBACK_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")
# Bytes no header of a poll holds: an answer would echo its Origin.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")

_REFUSED_HEADERS = frozenset((b"transfer-encoding", b"expect", b"upgrade", b"access-control-request-headers"))
_POLL_METHODS = {b"POST": "xhr", b"GET": "jsonp"}
_CACHE_CONTROL = "Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
_XHR_HEAD = ("HTTP/1.1 200 OK\r\n"
             "Content-Type: application/javascript; charset=UTF-8\r\n"
             "Date: %s\r\n"
             "Vary: Origin\r\n"
             "%s" + _CACHE_CONTROL +
             "Content-Length: %d\r\n"
             "\r\n")
_JSONP_HEAD = ("HTTP/1.1 200 OK\r\n"
               "Content-Type: application/javascript; charset=UTF-8\r\n"
               "Date: %s\r\n" + _CACHE_CONTROL +
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


def parse_poll(data, prefix, client_header=None):
    """The :class:`Poll` that ``data`` (bytes a connection has received) begins
    with, for a router at ``prefix``; None if it may be anything else (see the
    rules). ``client_header``: the header (lower-case bytes) whose value is the
    poll's ``named_client``, if any."""
    end = data.find(END_OF_HEAD, 0, MAX_HEAD_BYTES)
    if end < 0:
        return None
    head = data[:end]
    if _CONTROL.search(head) is not None:
        return None
    lines = head.split(b"\r\n")
    request_line = lines[0].split(b" ")
    if len(request_line) != 3 or request_line[2] != b"HTTP/1.1":
        return None
    transport = _POLL_METHODS.get(request_line[0])
    target = _target(request_line[1], prefix, transport)
    if target is None:
        return None
    session_id, callback = target
    origin = host = named_client = None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name[-1:] in b" \t" or line[:1] in b" \t" or b"\n" in line or b"\r" in line:
            return None
        name = name.lower()
        value = value.strip(b" \t")
        if name in _REFUSED_HEADERS:
            return None
        if name == b"content-length":
            if value != b"0":
                return None
        elif name == b"connection":
            if b"close" in value.lower():
                return None
        elif name == b"origin":
            if origin is not None:
                return None
            origin = value.decode("latin-1")
        elif name == b"host":
            if host is not None:
                return None
            host = value.decode("latin-1")
        elif name == client_header:
            if named_client is not None:
                return None
            named_client = value.decode("latin-1")
    if host is None:
        return None
    return Poll(transport, session_id, end + len(END_OF_HEAD), origin, host, callback, named_client)


def _target(target, prefix, transport):
    """``(session id, callback or None)`` of a request target (bytes) that
    polls by ``transport`` under ``prefix``, or None."""
    if transport is None or b"%" in target:
        return None
    path, _, query = target.decode("latin-1").partition("?")
    callback = None
    if transport == "jsonp":
        callbacks = [value for name, _, value in (pair.partition("=") for pair in query.split("&")) if name == "c"]
        if not callbacks or not CALLBACK_NAME.match(callbacks[-1]):
            return None
        callback = callbacks[-1]
    parts = path.split("/")
    # prefix, server, session, transport: the router's r"<prefix>/[^/.]+/(?P<session_id>[^/.]+)/<transport>$"
    if len(parts) < 4 or parts[-1] != transport or "/".join(parts[:-3]) != prefix:
        return None
    server, session_id = parts[-3], parts[-2]
    if not server or not session_id or "." in server or "." in session_id:
        return None
    return session_id, callback


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
