"""The audience report: how many each broker serves, summed in Redis, and the broker's own write
that proves its read loop delivers.

Rules this module keeps:

* Every :data:`AUDIENCE_REPORT_S` each broker reports how many it serves to
  one hash beside the stream and reads back the room's total, how many
  brokers make it and the room's epoch, in one script
  (:data:`broker.cluster.room_in_redis.AUDIENCE_REPORT`) that also drops the
  brokers silent for :data:`AUDIENCE_STALE_MS` (one that died, or lost
  Redis) and times them by Redis's clock, not the brokers'.
* The report is a write, and the broker's own: a read of the backplane asks
  for it (:meth:`AudienceReport.ask`, at most every :data:`REPORT_ASKED_S`,
  in the read's pipeline), and one not seen before has come back through the
  read loop (:meth:`AudienceReport.came_back`): the round trip
  :mod:`broker.core.liveness` asks for within a bound.
* The backplane (:mod:`broker.cluster.backplane`) runs it; calls go through
  :class:`broker.cluster.replies.Replies`, in time or failed.
"""

import secrets

from broker.cluster import room_in_redis

AUDIENCE_REPORT_S = 1.0
AUDIENCE_STALE_MS = 3000
REPORT_ASKED_S = 0.5


class AudienceReport:
    """This broker's report to the audience of the room served at ``prefix``, through ``replies``."""

    def __init__(self, replies, prefix):
        self.replies = replies
        self.key = room_in_redis.audience_key(prefix)
        self.epoch_key = room_in_redis.epoch_key(prefix)
        self.broker_id = secrets.token_hex(8)
        self._script = replies.redis.register_script(room_in_redis.AUDIENCE_REPORT)
        self._asked_at = None
        self._seen = None

    async def send(self, count):
        """Report ``count`` clients: the room's total, its brokers, and its epoch (None: not set)."""
        total, brokers, epoch = await self.replies.answer(self._script(
            keys=[self.key, self.epoch_key], args=[self.broker_id, count, AUDIENCE_STALE_MS]))
        return int(total), int(brokers), None if epoch is None else epoch.decode()

    async def leave(self):
        """Leave the count at once, rather than after AUDIENCE_STALE_MS."""
        await self.replies.answer(self.replies.redis.hdel(self.key, self.broker_id))

    def ask(self, pipe, now):
        """Ask, in a read's ``pipe``, for this broker's latest report, unless asked within
        REPORT_ASKED_S of ``now`` (seconds): whether it did."""
        if self._asked_at is not None and now - self._asked_at < REPORT_ASKED_S:
            return False
        self._asked_at = now
        pipe.hget(self.key, self.broker_id)
        return True

    def came_back(self, reply):
        """Whether ``reply``, the answer to :meth:`ask`, is a report not seen before."""
        if reply is None or reply == self._seen:
            return False
        self._seen = reply
        return True
