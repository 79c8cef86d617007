"""The named rooms of a cluster broker, through Redis: their writes, feeds and audiences, built and stopped together.

Rules this module keeps:

* Named rooms have connections of their own, never the default room's
  (:mod:`broker.cluster.backplane`, whose keys, stream and read loop stay as they are): one
  for their writes (:mod:`broker.cluster.room_writes`), one for their pub/sub, and a pool for
  their loads and recoveries (:mod:`broker.cluster.room_feeds`). So a broker with no named
  room, or no viewer of one, adds one idle pub/sub connection and nothing per message.
* They reach the Redis ``--redis`` names as the backplane does (Sentinels included), with its
  ``--redis-min-replicas``: acknowledged means replicated in every room; and they give memory
  back to a Redis that refuses writes for it with the default room's giver
  (:class:`broker.cluster.appends.MemoryGiver`), and tell the backplane what Redis refused: one
  policy, one count, one ``/healthz`` for every room.
* A room's keys live :func:`broker.cluster.named_rooms.expiry_ms` after its last publish.
* Its figures (``named_rooms`` in ``/stats``, ``named_rooms_`` in ``/metrics``) are totals over
  the rooms, never a label a room: the rooms read, the pub/sub connection's reconnects, the
  recoveries from a room's stream, the gaps told by reason, the clients' messages refused.
* It is what the registry of rooms (:class:`broker.core.rooms.Rooms`) tells of the rooms joined
  and forgotten (:class:`broker.cluster.room_feeds.RoomListener`, passed on to the feeds) and
  asks each room's audience of: the count at every broker
  (:mod:`broker.cluster.room_audiences`, with ``--announce-audience`` only).
"""

from broker.cluster import named_rooms, redis_address
from broker.cluster.replies import Replies
from broker.cluster.room_audiences import RoomAudiences
from broker.cluster.room_feeds import RoomFeeds
from broker.cluster.room_writes import RoomWrites
from broker.core.figures import COUNTER, GAUGE, Figure, Metric


class RoomsInRedis:
    """The named rooms at ``prefix`` in the Redis ``address`` (``--redis``'s text): ``writes``
    for the Engine (:class:`broker.cluster.redis_engine.RedisEngine`'s ``rooms``), ``feeds``
    told through this, the registry of rooms' listener (see the module's rules);
    hubs keeping ``history`` messages for ``history_seconds``, written as the default room's
    ``backplane`` (a :class:`broker.cluster.backplane.Backplane`) writes (see the module's rules);
    with ``audiences``, each room's audience reported and read."""

    def __init__(self, address, prefix, history, history_seconds, backplane, audiences=False):
        address = redis_address.parse(address)
        expiry_ms = named_rooms.expiry_ms(history_seconds)
        maxlen = max(named_rooms.STREAM_MAXLEN, history + 1)
        self.writes = RoomWrites(Replies.to(address, max_connections=1), prefix, maxlen, expiry_ms, backplane)
        self.feeds = RoomFeeds(Replies.to(address).redis, prefix, history, expiry_ms)
        self.audiences = RoomAudiences(Replies.to(address), prefix, self.feeds.hubs) if audiences else None

    def room_joined(self, name, hub):
        self.feeds.room_joined(name, hub)

    def room_forgotten(self, name):
        self.feeds.room_forgotten(name)

    def audience(self, name):
        """Room ``name``'s viewers at every broker, or None while unknown (or not reported)."""
        return None if self.audiences is None else self.audiences.total(name)

    def start(self):
        self.feeds.start()
        if self.audiences is not None:
            self.audiences.start()

    async def stop(self):
        if self.audiences is not None:
            await self.audiences.stop()
        await self.writes.close()
        await self.feeds.stop()

    FIGURES = (
        Figure("rooms_read", lambda rooms: len(rooms.feeds),
               Metric("named_rooms_read", GAUGE, "Named rooms this broker reads from Redis: those it has viewers of, "
                      "or had within their history's age")),
        Figure("reconnects", "feeds.reconnects",
               Metric("named_rooms_reconnects", COUNTER, "Times the named rooms' pub/sub connection was made again")),
        Figure("recoveries", "feeds.recoveries",
               Metric("named_rooms_recoveries", COUNTER, "Times a named room's channel skipped messages, read back "
                      "from its stream")),
        Figure("gaps", lambda rooms: dict(rooms.feeds.gaps),
               Metric("named_rooms_gaps", COUNTER, "Gaps told to the clients of named rooms, by reason", ("reason",))),
        Figure("relays_refused", "writes.refused",
               Metric("named_rooms_relays_refused", COUNTER, "Clients' messages in named rooms that Redis did not "
                      "take")),
    )
