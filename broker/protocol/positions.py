"""The position envelope: what a client that asks for positions receives.

A client asks with query parameters on the SockJS base URL, which
sockjs-client carries to the URL of every transport and of every send::

    new SockJS("https://example.com/broadcast?positions=1")
    new SockJS("https://example.com/broadcast?positions=1&epoch=k3J9x2Qa&since=41")

Without ``positions`` a client gets exactly the bytes it always got. With
it, every message of a SockJS ``a[...]`` frame is one JSON object:

``{"o":"41","d":<message>}``
    A room message and its offset. Offsets are texts: a count for a broker
    alone, the Redis stream id in a cluster; they grow with every message,
    and every broker of a cluster gives a message the same offset.
``{"c":"open","epoch":"k3J9x2Qa","o":"40"}``
    The first message of a connection that did not ask to resume: the
    replay tail follows (``--replay``), then live messages. ``o`` is the
    newest offset when the connection joined.
``{"c":"resumed","epoch":"k3J9x2Qa","o":"40"}``
    The first message of a connection that resumed: every message after
    ``since`` follows, then live ones; nothing missed, nothing twice.
``{"c":"gap","epoch":"Pq81Zt-w","o":"40","reason":"epoch"}``
    The messages after ``since`` cannot be given: the replay tail follows,
    as for a new connection. ``reason`` says why: ``epoch`` (the room's
    history was lost since: a broker alone restarted, or Redis lost its
    data; sent to connected clients too, when it happens; every message of
    the new epoch follows instead of the tail, when the history holds them
    all), ``expired`` (older than the history kept, ``--history``, or
    more messages after it than a client is sent at once, ``--max-buffer``),
    ``unknown`` (an offset the room never gave).
``{"a":<message>}``
    The broker's own announcement (``{"audience": N}``): no offset, not
    part of the room's history.

The epoch names one history: a client keeps the epoch and the newest
offset it saw, and sends both back as ``epoch`` and ``since`` when it
reconnects.

Rules this module keeps: every envelope is built from a message's JSON text
by string formatting, never by encoding the message again; the query is
read once, as a session opens, and a malformed ``since`` is an ``unknown``
gap, never an error; offsets compare as ``(number, sequence)`` pairs
(:func:`offset_key`), never as text, and are written in ASCII digits only
(``int`` would read ``٤١`` as 41). It uses the standard library only: the
load client reads the envelope by these same rules.
"""

import json
import re
from typing import NamedTuple, Optional

QUERY_POSITIONS = "positions"
QUERY_EPOCH = "epoch"
QUERY_SINCE = "since"
_OFFSET = re.compile(r"([0-9]{1,40})(?:-([0-9]{1,40}))?")

OPEN = "open"
RESUMED = "resumed"
GAP = "gap"
# Why a resume is a gap.
EPOCH = "epoch"
EXPIRED = "expired"
UNKNOWN = "unknown"
OUTCOMES = (OPEN, RESUMED, EPOCH, EXPIRED, UNKNOWN)
"""How a connection with positions starts: the last three are gaps, by reason."""


class Request(NamedTuple):
    """What a client asked for as its session opened."""

    positions: bool
    since: Optional[tuple]
    """``(epoch, offset)`` texts to resume after, or None."""


NONE = Request(False, None)


def requested(arguments):
    """The :class:`Request` in a transport URL's query ``arguments`` (Tornado's
    ``{name: [bytes, ...]}``)."""
    if QUERY_POSITIONS not in arguments:
        return NONE
    epoch = first(arguments, QUERY_EPOCH)
    since = first(arguments, QUERY_SINCE)
    return Request(True, (epoch, since) if epoch is not None and since is not None else None)


def first(arguments, name):
    """The first value of the query parameter ``name`` in ``arguments``, as text (at most 80
    characters), or None."""
    values = arguments.get(name)
    if not values:
        return None
    return values[0].decode("utf-8", "replace")[:80]


def offset_key(offset):
    """The comparable key of an offset (``"41"``, ``"1700000000000-3"``, or an int);
    ValueError for anything else."""
    if type(offset) is int:
        if offset < 0:
            raise ValueError("a negative offset")
        return offset, 0
    match = _OFFSET.fullmatch(offset) if len(offset) <= 40 else None
    if match is None:
        raise ValueError("not an offset: %r" % offset[:40])
    return int(match.group(1)), int(match.group(2) or 0)


def message(offset, encoded):
    """A room message ``encoded`` (its JSON text) at ``offset``."""
    return '{"o":"%s","d":%s}' % (offset, encoded)


# What :func:`message` adds to a message beside its offset, with the comma that follows it.
ENVELOPE_BYTES = len(message("", "")) + 1


def sent_size(offset, encoded):
    """The bytes ``encoded`` at ``offset`` takes in a batch sent with positions, the larger of
    its two forms: its envelope, and the comma after it."""
    return len(encoded) + len(str(offset)) + ENVELOPE_BYTES


def announcement(encoded):
    """The broker's announcement ``encoded`` (its JSON text)."""
    return '{"a":%s}' % encoded


def control(kind, epoch, offset, reason=None):
    """The JSON text of a connection's start (``open``, ``resumed``) or of a
    ``gap`` and its ``reason``."""
    body = {"c": kind, "epoch": epoch, "o": str(offset)}
    if reason is not None:
        body["reason"] = reason
    return json.dumps(body, separators=(",", ":"))
