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
* :func:`poll_answer` is the complete answer to a poll, as
  :mod:`broker.protocol.http_answers` states it and Tornado's handler sends
  it (less ``Server``): for xhr, with the CORS headers for the request's
  ``Origin``, which the caller has checked against its policy.
"""

import re
from typing import NamedTuple, Optional

from broker.protocol.http_answers import JSONP_POLL_ANSWER, XHR_POLL_ANSWER, jsonp_poll_body, xhr_poll_body
from broker.protocol.request_heads import session_path

# The callback names a jsonp or htmlfile page may give (``c``); others are refused.
CALLBACK_NAME = re.compile(r"[A-Za-z0-9_.]+\Z")

_POLL_METHODS = {b"POST": "xhr", b"GET": "jsonp"}


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


def poll_answer(poll, frame, date):
    """The whole answer (bytes) to ``poll`` carrying the SockJS ``frame`` (str),
    dated ``date`` (HTTP's form)."""
    if poll.transport == "jsonp":
        return JSONP_POLL_ANSWER.answer(date, poll.origin, jsonp_poll_body(poll.callback, frame))
    return XHR_POLL_ANSWER.answer(date, poll.origin, xhr_poll_body(frame))
