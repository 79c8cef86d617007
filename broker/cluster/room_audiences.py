"""The named rooms' audiences across brokers: each broker's count of a room, summed in Redis.

Rules this module keeps (the default room's audience is :mod:`broker.cluster.audience_report`'s,
untouched; its script, :data:`broker.cluster.room_in_redis.AUDIENCE_REPORT`, is reused):

* Only a broker that announces audiences (``--announce-audience``) reports them: every
  :data:`broker.cluster.audience_report.AUDIENCE_REPORT_S`, each room it reads (those it
  has viewers of, :mod:`broker.cluster.room_feeds`) reports its viewers here to the room's
  audience hash (``sockjs-broker:PREFIX:room:{R}:audience``) and reads back the room's
  total, :data:`ROOMS_A_CALL` rooms a script, one script after the other: at 10,000 rooms,
  20 round trips a second, each a few milliseconds of Redis, and the event loop free
  between them. A room a broker has no viewer of costs it nothing; a broker gone, or a room it left, drops out of a
  room's total after :data:`broker.cluster.audience_report.AUDIENCE_STALE_MS`, and the hash
  expires with its last report.
* A room's total is None (unknown: nothing announced, :mod:`broker.core.audience`) until
  its first report came back, and while Redis fails them.
"""

import asyncio
import logging
import secrets

from broker.cluster import named_rooms, room_in_redis
from broker.cluster.audience_report import AUDIENCE_REPORT_S, AUDIENCE_STALE_MS
from broker.cluster.replies import FAILURES

LOG = logging.getLogger("broker.cluster.room_audiences")
# The rooms one script reports: Redis runs a script alone, so a call is kept to milliseconds.
ROOMS_A_CALL = 500


def audience_key(prefix, name):
    """The hash of room ``name``'s audience, a field a broker."""
    return named_rooms.room_key(prefix, name) + ":audience"


class RoomAudiences:
    """The audiences of the named rooms at ``prefix``, reported through ``replies`` (a
    :class:`broker.cluster.replies.Replies`) for the rooms ``rooms()`` gives (``{name: hub}``)."""

    def __init__(self, replies, prefix, rooms):
        self.replies = replies
        self.prefix = prefix
        self._rooms = rooms
        self.broker_id = secrets.token_hex(8)
        self._script = replies.redis.register_script(room_in_redis.AUDIENCES_REPORT)
        self._totals = {}
        self._task = None
        self._stopping = None

    def total(self, name):
        """Room ``name``'s viewers at every broker, or None while unknown."""
        return self._totals.get(name)

    def start(self):
        self._stopping = asyncio.Event()
        self._task = asyncio.ensure_future(self._report_forever())

    async def stop(self):
        """Stop reporting, and close the connections."""
        self._stopping.set()
        await asyncio.gather(self._task, return_exceptions=True)
        await self.replies.redis.aclose()

    async def report(self):
        """Report every room read here, and keep each one's total (see the module's rules)."""
        rooms = list(self._rooms().items())
        totals = {}
        for start in range(0, len(rooms), ROOMS_A_CALL):
            batch = rooms[start:start + ROOMS_A_CALL]
            keys = [audience_key(self.prefix, name) for name, _ in batch]
            counts = [len(hub) for _, hub in batch]
            args = [self.broker_id, AUDIENCE_STALE_MS] + counts
            reported = await self.replies.answer(self._script(keys=keys, args=args))
            totals.update(zip((name for name, _ in batch), reported))
        self._totals = totals

    async def _report_forever(self):
        while not self._stopping.is_set():
            try:
                await self.report()
            except FAILURES as error:
                LOG.debug("the rooms' audiences were not reported (Redis: %s)", error or type(error).__name__)
                self._totals = {}
            except Exception:
                # As for any event-loop callback: log it, and the reporting goes on.
                LOG.exception("reporting the rooms' audiences failed")
                self._totals = {}
            try:
                await asyncio.wait_for(self._stopping.wait(), AUDIENCE_REPORT_S)
            except asyncio.TimeoutError:
                pass
