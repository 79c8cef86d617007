"""A client's send (xhr_send, jsonp_send), read and answered as bytes, without I/O.

Every HTTP transport's client sends its messages in a request of their own:
``POST <prefix>/<server>/<session>/xhr_send`` with the JSON array as the body
(xhr-streaming, eventsource, htmlfile, xhr-polling), or ``jsonp_send`` with
it in a form's ``d`` field or as the body (jsonp-polling). A client sends
rarely, so each send comes on a new connection or one idle since the last
(:mod:`broker.transports.polling` answers it there); Tornado would make a
request object, its headers, a handler and a log line for it.

Rules this module keeps:

* :func:`send_of` recognises a send only when it is sure: its head is one
  :func:`broker.protocol.request_heads.read_head` has read, a ``POST`` of a path
  the router's send routes match, with a body no longer than the router's
  ``max_message_size`` and all of it in the bytes given, which carries a JSON
  array. Anything else is None, and goes to Tornado as it was sent: an empty
  body, broken JSON, or JSON that is not an array are answered there with
  their errors, a body over the limit closes the session there.
* :func:`send_answer` is the complete answer to a send read, as
  :mod:`broker.protocol.http_answers` states it and Tornado's handler sends
  it (less ``Server``): ``204`` for xhr_send, ``200 ok`` for jsonp_send,
  ``413`` for one whose message the room refused as too big (its JSON
  text, escaped, over ``max_message_size``, however small the body), with
  the CORS headers for the request's ``Origin``, which the caller has
  checked against its policy.
"""

import urllib.parse
from typing import List, NamedTuple, Optional

from broker.protocol import frames
from broker.protocol.http_answers import (JSONP_SEND_ANSWER, JSONP_SEND_BODY, TOO_BIG_SEND_ANSWER, TOO_BIG_SEND_BODY,
                                          XHR_SEND_ANSWER, XHR_SEND_BODY)
from broker.protocol.request_heads import session_path

XHR_SEND = "xhr_send"
JSONP_SEND = "jsonp_send"
FORM = "application/x-www-form-urlencoded"
# What a send that carries no messages is answered, with a 500 (Tornado's handler answers it).
BROKEN_JSON = "Broken JSON encoding."
PAYLOAD_EXPECTED = "Payload expected."


class Send(NamedTuple):
    """A send read from a connection."""

    transport: str
    """``xhr_send`` or ``jsonp_send``."""
    session_id: str
    size: int
    """How many bytes of the connection it takes: its head and its body."""
    messages: List[object]
    """What it sends: the JSON array its body carries."""
    origin: Optional[str]
    """Its ``Origin`` header, if any."""
    host: str
    """Its ``Host`` header."""
    named_client: Optional[str] = None
    """The value of the client address header asked for, if any."""


def jsonp_payload(body, content_type):
    """The JSON a jsonp_send's ``body`` carries: the body itself, or, in a form
    (``content_type``, a str or None), its ``d`` field; None for a form without one."""
    if (content_type or "").split(";")[0].strip().lower() != FORM:
        return body
    if not body.startswith(b"d="):
        return None
    return urllib.parse.unquote_to_bytes(body[2:].replace(b"+", b" "))


def messages_of(payload):
    """The messages a send's ``payload`` (its JSON, or None) carries: a list.
    Raises ValueError, its text the answer's, when it carries none: broken
    JSON, or nothing or something else than an array."""
    try:
        messages = frames.decode_json(payload) if payload else None
    except ValueError:
        raise ValueError(BROKEN_JSON) from None
    if not isinstance(messages, list):
        raise ValueError(PAYLOAD_EXPECTED)
    return messages


def send_of(head, data, prefix, max_size):
    """The :class:`Send` whose head is ``head`` (a
    :class:`broker.protocol.request_heads.RequestHead`, read from ``data``, the bytes
    a connection has received), for a router at ``prefix`` whose messages are
    at most ``max_size`` bytes; None if it may be anything else (see the rules)."""
    if head.method != b"POST" or not 0 < head.content_length <= max_size:
        return None
    end = head.size + head.content_length
    if len(data) < end:
        return None
    for transport in (XHR_SEND, JSONP_SEND):
        target = session_path(head.target, prefix, transport)
        if target is not None:
            break
    else:
        return None
    body = data[head.size:end]
    try:
        messages = messages_of(body if transport == XHR_SEND else jsonp_payload(body, head.content_type))
    except ValueError:
        return None
    return Send(transport, target[0], end, messages, head.origin, head.host, head.named_client)


def send_answer(send, date, taken=True):
    """The whole answer (bytes) to ``send``, dated ``date`` (HTTP's form): the one
    to a send taken, or if not ``taken`` (a message over the size the room keeps), 413."""
    if not taken:
        return TOO_BIG_SEND_ANSWER.answer(date, send.origin, TOO_BIG_SEND_BODY)
    if send.transport == XHR_SEND:
        return XHR_SEND_ANSWER.answer(date, send.origin, XHR_SEND_BODY)
    return JSONP_SEND_ANSWER.answer(date, send.origin, JSONP_SEND_BODY)
