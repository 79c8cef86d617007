"""A room's tail read from its stream: what a broker loads into the room's hub before reading on.

Rules this module keeps (the default room's backplane, :mod:`broker.cluster.backplane`, and the
named rooms' feeds, :mod:`broker.cluster.room_feeds`, load through it):

* One transaction reads the stream's newest entries (XREVRANGE, the hub's ``history`` messages
  and one more), the stream's facts (XINFO STREAM) and the room's counters (HGETALL): the
  counters' latest messages are never ahead of the tail.
* The history starts after the entry before that tail; when the stream holds no more than the
  tail, after the newest entry trimmed from it, or at its beginning if none was (or there is
  no stream yet).
* Reading goes on after the newest entry of the stream (``0-0`` when it is empty); ``added``
  is how many entries the stream was ever given (Redis's ``entries-added``).
"""

from typing import List, NamedTuple, Optional

from broker.cluster import room_in_redis
from broker.cluster.room_in_redis import FIELD
from broker.cluster.state import BEGINNING, before


def id_text(value):
    """A stream id as XINFO STREAM gives it (bytes, or a str), as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


class Tail(NamedTuple):
    """What :func:`read` found: the history's ``start``, its messages (``offsets``, ``encoded``,
    their conflating ``keys`` or None), each counter's ``latest`` message, where reading goes on
    (``last_id``) and the stream's ``added``."""

    start: str
    offsets: List[str]
    encoded: List[str]
    keys: Optional[list]
    latest: list
    last_id: str
    added: int


def whole(info):
    """Whether a stream of XINFO STREAM's ``info`` (an error: no stream yet) holds every entry it
    was ever given, none trimmed."""
    return isinstance(info, Exception) or info["entries-added"] == info["length"]


async def read(replies, stream, counters, history):
    """The :class:`Tail` of ``stream`` (a key) for a hub keeping ``history`` messages, with the
    counters' hash ``counters``, through ``replies`` (a :class:`broker.cluster.replies.Replies`)."""
    pipe = replies.redis.pipeline(transaction=True)
    pipe.xrevrange(stream, count=history + 1)
    pipe.xinfo_stream(stream)
    pipe.hgetall(counters)
    entries, info, counted = await replies.answer(pipe.execute(raise_on_error=False))
    for reply in (entries, counted):
        if isinstance(reply, Exception):
            raise reply
    if isinstance(info, Exception):  # no stream yet
        info = {"entries-added": 0, "length": 0}
    entries.reverse()
    kept = entries[-history:] if history else []
    before_kept = entries[:len(entries) - len(kept)]
    if before_kept:
        start = before_kept[-1][0].decode()
    elif whole(info):
        start = BEGINNING  # none of it trimmed
    elif not info["length"]:
        start = id_text(info["last-generated-id"])
    else:  # the history starts after the newest entry trimmed, just before the oldest kept
        start = before(id_text(info["first-entry"][0]))
    return Tail(start, [entry_id.decode() for entry_id, _ in kept], [fields[FIELD].decode() for _, fields in kept],
                room_in_redis.keys_of(kept), room_in_redis.latest_counters(counted),
                entries[-1][0].decode() if entries else BEGINNING, info["entries-added"])
