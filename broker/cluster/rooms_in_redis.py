"""The named rooms of a cluster broker, through Redis: their writes and their feeds, built and stopped together.

Rules this module keeps:

* Named rooms have connections of their own, never the default room's
  (:mod:`broker.cluster.backplane`, whose keys, stream and read loop stay as they are): one
  for their writes (:mod:`broker.cluster.room_writes`), one for their pub/sub, and a pool for
  their loads and recoveries (:mod:`broker.cluster.room_feeds`). So a broker with no named
  room, or no viewer of one, adds one idle pub/sub connection and nothing per message.
* They reach the Redis ``--redis`` names as the backplane does (Sentinels included), with its
  ``--redis-min-replicas``: acknowledged means replicated in every room.
* A room's keys live :func:`broker.cluster.named_rooms.expiry_ms` after its last publish.
"""

from broker.cluster import named_rooms, redis_address
from broker.cluster.replies import Replies
from broker.cluster.room_feeds import RoomFeeds
from broker.cluster.room_writes import RoomWrites


class RoomsInRedis:
    """The named rooms at ``prefix`` in the Redis ``address`` (``--redis``'s text): ``writes``
    for the Engine (:class:`broker.cluster.redis_engine.RedisEngine`'s ``rooms``), ``feeds``
    for the registry of rooms to tell (a :class:`broker.cluster.room_feeds.RoomListener`);
    hubs keeping ``history`` messages for ``history_seconds``, writes acknowledged by
    ``min_replicas`` (the backplane's)."""

    def __init__(self, address, prefix, history, history_seconds, min_replicas):
        address = redis_address.parse(address)
        expiry_ms = named_rooms.expiry_ms(history_seconds)
        maxlen = max(named_rooms.STREAM_MAXLEN, history + 1)
        self.writes = RoomWrites(Replies.to(address, max_connections=1), prefix, maxlen, min_replicas, expiry_ms)
        self.feeds = RoomFeeds(Replies.to(address).redis, prefix, history, expiry_ms)

    def start(self):
        self.feeds.start()

    async def stop(self):
        await self.writes.close()
        await self.feeds.stop()
