"""Rooms: their names, and the rooms a client joins, from its URL's query.

A client names the rooms it joins with query parameters on the SockJS base URL,
which sockjs-client carries to the URL of every transport and of every send
(as it does ``positions``)::

    new SockJS("https://example.com/broadcast?rooms=campaign-42")
    new SockJS("https://example.com/broadcast?rooms=news:sports,news:weather&positions=1")

Rules this module keeps:

* A room's name is 1 to :data:`MAX_NAME` characters of ``A-Z a-z 0-9 _ - . :``
  (:func:`valid_name`), matched whole. The default room has no name on the wire
  (:data:`DEFAULT`, ``""`` inside): a URL or a publish without ``rooms`` or
  ``room`` is in it, as every URL was before rooms, and no ``rooms=`` names it.
* ``rooms=`` takes names separated by commas, deduplicated in order, at most the
  session's bound (``--max-session-rooms``); an empty value, a bad name or too
  many names is refused (ValueError, its text naming the rule), never read in part.
* Resume per room: ``epoch.NAME`` and ``since.NAME`` give a room's position; a
  session of one room may give its position as ``epoch`` and ``since`` too, as a
  session of the default room does. ``positions`` asks for positions in every room.
* Only the first value of a session's parameter counts, as in :mod:`broker.protocol.positions`;
  the query is read once, as a session opens. A publish's ``room=`` given twice is refused.
* No I/O; the standard library only.
"""

import re
from typing import NamedTuple, Tuple

from broker.protocol import positions

QUERY_ROOMS = "rooms"
QUERY_ROOM = "room"
DEFAULT = ""
MAX_NAME = 64
ALPHABET = "A-Z a-z 0-9 _ - . :"
_NAME = re.compile(r"[A-Za-z0-9_.:-]{1,%d}" % MAX_NAME)
RULE = "a room's name is 1 to %d characters of %s" % (MAX_NAME, ALPHABET)


class Joining(NamedTuple):
    """The rooms a session asked for: ``names`` (empty: the default room alone), and for each
    its :class:`broker.protocol.positions.Request`, in the order of ``names``."""

    names: Tuple[str, ...]
    requests: Tuple[positions.Request, ...]


def valid_name(text):
    """True for a room's name (see the module's rules)."""
    return _NAME.fullmatch(text) is not None


def checked_name(text):
    """``text``, a room's name; ValueError, saying the rule, for any other text."""
    if not valid_name(text):
        raise ValueError("%s, not %r" % (RULE, text[:MAX_NAME + 1]))
    return text


def parse_rooms(value, most):
    """The names of ``value``, a ``rooms=`` query value, deduplicated in order; ValueError
    for an empty value, a bad name, or more than ``most`` names."""
    if not value:
        raise ValueError("rooms= names no room: %s" % RULE)
    names = tuple(dict.fromkeys(checked_name(text) for text in value.split(",")))
    if len(names) > most:
        raise ValueError("%d rooms: a session joins at most %d" % (len(names), most))
    return names


def requested(arguments, most):
    """The :class:`Joining` of a transport URL's query ``arguments`` (Tornado's
    ``{name: [bytes, ...]}``), a session joining at most ``most`` rooms; ValueError as
    :func:`parse_rooms` raises it."""
    request = positions.requested(arguments)
    values = arguments.get(QUERY_ROOMS)
    if values is None:
        return Joining((), (request,))
    names = parse_rooms((values[0] if values else b"").decode("utf-8", "replace"), most)
    if not request.positions:
        return Joining(names, (request,) * len(names))
    return Joining(names, tuple(positions.Request(True, _since(arguments, name, request.since if len(names) == 1
                                                               else None))
                                for name in names))


def _since(arguments, name, shared):
    """The ``(epoch, offset)`` room ``name`` resumes after, or ``shared``, the session's own."""
    epoch = positions.first(arguments, positions.QUERY_EPOCH + "." + name)
    since = positions.first(arguments, positions.QUERY_SINCE + "." + name)
    return (epoch, since) if epoch is not None and since is not None else shared


def room_of(values):
    """The room a publish names with ``?room=`` (``values``, every value given: none, the
    default room); ValueError, saying the rule, for a bad name, or for two: which one a
    sender meant cannot be told."""
    if len(values) > 1:
        raise ValueError("given %d times: name one room" % len(values))
    return checked_name(values[0]) if values else DEFAULT


def tag(name, text, enveloped):
    """``text``, a JSON text of room ``name``'s batch, as a multiplexed session receives it:
    ``{"r":NAME,"d":<text>}``, or with ``enveloped`` (``text`` is a position envelope, an
    object) the envelope with ``"r"`` first."""
    if enveloped:
        return '{"r":"%s",%s' % (name, text[1:])
    return '{"r":"%s","d":%s}' % (name, text)

