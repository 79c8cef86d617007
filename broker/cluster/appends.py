"""The backplane's writes: what the hub hands over, appended to the room's stream in one step.

Rules this module keeps (the backplane, :mod:`broker.cluster.backplane`,
queues and answers; this module writes):

* A batch is one XADD, or for several entries one MULTI/EXEC transaction:
  Redis appends its entries at once, so the blocked XREAD of every broker
  gets them in one reply. Each entry has its own reply: Redis applies the
  others of a transaction when one fails at run time.
* An entry is a JSON text, an :class:`Append` for a message with a conflating
  key or an idempotency key (with one, :data:`broker.cluster.room_in_redis.PUBLISH_ONCE`),
  or a :class:`Count` (:data:`broker.cluster.room_in_redis.COUNT`).
* Writes go through a client of one connection, so that the WAIT after a
  transaction (``min_replicas`` above 0) waits for that transaction's
  replication: one WAIT a transaction, never one a message. Fewer replicas
  than ``min_replicas`` within :data:`REPLICA_WAIT_MS` fail the whole batch
  with :class:`TooFewReplicas`: what it appended may be lost by a failover,
  so it is not acknowledged (a retry with its idempotency key appends
  nothing twice).
* A Redis refusing a write for memory (``maxmemory``, ``noeviction``)
  applied nothing of it: Redis refuses a transaction whole, or, when it
  holds only scripts, each of them, which judge the memory as it was before
  the transaction (what a transaction took before them stays). The room then
  gives memory back, and the batch is tried again, until it is taken or
  nothing is left to give (:meth:`Appends.give_memory`): first the oldest half
  of its idempotency records (a retry after them may publish twice: counted),
  then half its stream (exactly, not by whole nodes), down to one entry. The
  stream's own trim rides on the next XADD, which Redis refuses, so without
  this a full Redis would stay full; and keys kept for a window would stop
  every publish, with a key or without, for as long as they live. What is cut
  of the stream is the oldest, as a trim would: a broker that had not read it
  tells its clients a gap.
"""

import asyncio
from typing import NamedTuple, Optional

from redis.exceptions import OutOfMemoryError, RedisError

from broker.cluster import room_in_redis
from broker.cluster.room_in_redis import FIELD, KEY_FIELD
from broker.core import counters, idempotency

# How long a transaction's WAIT waits for the replicas.
REPLICA_WAIT_MS = 1000


class OnceRecord(NamedTuple):
    """What a script keeps for an idempotency ``key`` seen first: ``record`` (an
    :meth:`broker.core.idempotency.Answer.record`, the script adds the rest), for ``window_s``."""

    key: str
    record: str
    window_s: float

    def digest(self):
        """The key as Redis keeps it (:func:`broker.core.idempotency.digest`)."""
        return idempotency.digest(self.key)

    def window_ms(self):
        return max(1, int(self.window_s * 1000))


class Append(NamedTuple):
    """A message to append, ``encoded``, of the conflating ``key`` (or None); with ``once``
    (a :class:`OnceRecord`), only if its idempotency key was not seen."""

    encoded: str
    key: Optional[str]
    once: Optional[OnceRecord] = None

    def arguments(self, maxlen):
        """ARGV of :data:`broker.cluster.room_in_redis.PUBLISH_ONCE` for it, in a stream of about
        ``maxlen`` entries (a record of "" without an idempotency key)."""
        record, window_ms, digest = _once_arguments(self.once)
        return [record, self.encoded, maxlen, window_ms, self.key or "", digest, idempotency.MAX_KEYS]


class Count(NamedTuple):
    """A counter's operation waiting for the next transaction (see :class:`broker.cluster.redis_engine.RedisEngine`),
    once for an idempotency key if ``once`` (a :class:`OnceRecord`), in a room of at most ``most``
    counters (:func:`broker.core.counters.most_counters`)."""

    name: str
    operation: str
    given: counters.Amount
    once: Optional[OnceRecord]
    most: int

    def arguments(self, maxlen):
        """ARGV of :data:`broker.cluster.room_in_redis.COUNT` for it, in a stream of about ``maxlen`` entries."""
        record, window_ms, digest = _once_arguments(self.once)
        name = self.name
        return [self.operation, name, counters.units(self.given.value), self.given.scale,
                counters.message_prefix(name), maxlen, record, window_ms, counters.conflating_key(name).text,
                self.most, room_in_redis.COUNTED_DIGITS, counters.too_many(self.most), counters.OVER_BOUNDS, digest,
                idempotency.MAX_KEYS]


def _once_arguments(once):
    """The record, window in ms and digest a script is given for ``once`` (a :class:`OnceRecord` or None)."""
    return ("", 1, "") if once is None else (once.record, once.window_ms(), once.digest())


class TooFewReplicas(RedisError):
    """A transaction reached fewer replicas than ``--redis-min-replicas`` in time."""


async def replicated(replies, min_replicas):
    """Wait, through ``replies``, until ``min_replicas`` replicas hold what its connection wrote
    (none to wait for when 0), or raise :class:`TooFewReplicas` after :data:`REPLICA_WAIT_MS`."""
    if not min_replicas:
        return
    reached = await replies.answer(replies.redis.execute_command("WAIT", min_replicas, REPLICA_WAIT_MS))
    if reached < min_replicas:
        raise TooFewReplicas("%d of the %d replicas --redis-min-replicas asks for had it within %g s"
                             % (reached, min_replicas, REPLICA_WAIT_MS / 1000))


class Appends:
    """Batches appended to the stream of the room at ``prefix``, trimmed to about
    ``maxlen`` entries, through ``replies`` (a :class:`broker.cluster.replies.Replies`
    of one connection), each acknowledged by ``min_replicas`` replicas."""

    def __init__(self, replies, prefix, maxlen, min_replicas):
        self.replies = replies
        self.key = room_in_redis.stream_key(prefix)
        self.maxlen = maxlen
        self.min_replicas = min_replicas
        self.once_records = room_in_redis.once_records_key(prefix)
        self.once_order = room_in_redis.once_order_key(prefix)
        self.counters_key = room_in_redis.counters_key(prefix)
        self.memory_trims = 0
        self.memory_forgotten_keys = 0
        self._giving = asyncio.Lock()
        self._given = 0
        redis = replies.redis
        self._publish_once = redis.register_script(room_in_redis.PUBLISH_ONCE)
        self._count = redis.register_script(room_in_redis.COUNT)

    async def write(self, batch):
        """Append ``batch``: one reply for each of its entries; raises what failed it whole."""
        replies = []
        while True:
            try:
                answered = await self.replies.answer(self._append(batch))
            except OutOfMemoryError:
                if not await self.give_memory(self.replies):
                    raise
                continue
            taken = next((i for i, reply in enumerate(answered) if isinstance(reply, OutOfMemoryError)), len(answered))
            replies += answered[:taken]
            batch, refused = batch[taken:], answered[taken:]
            if not batch or not all(isinstance(reply, OutOfMemoryError) for reply in refused) or \
                    not await self.give_memory(self.replies):
                replies += refused
                break
        await replicated(self.replies, self.min_replicas)
        return replies

    async def give_memory(self, replies, stream=True):
        """Through ``replies``, forget the oldest half of the room's idempotency records or, when
        it keeps none and ``stream``, cut its stream to half its length; False when it had
        nothing to give. Only commands that Redis runs while it refuses writes for memory. One
        at a time: a caller that waited for another's gives nothing more, and is told it was given."""
        asked = self._given
        async with self._giving:
            if self._given != asked:
                return True
            given = await self._give_memory(replies, stream)
            self._given += given
            return given

    async def _give_memory(self, replies, stream):
        redis = replies.redis
        records = await replies.answer(redis.zcard(self.once_order))
        if records:
            fields = await replies.answer(redis.zrange(self.once_order, 0, max(1, records // 2) - 1))
            # Not a transaction: Redis refuses to queue one while it refuses writes for memory.
            # The record first: an order entry left without it is only forgotten again later.
            pipe = redis.pipeline(transaction=False)
            pipe.hdel(self.once_records, *fields)
            pipe.zrem(self.once_order, *fields)
            forgotten, _ = await replies.answer(pipe.execute())
            self.memory_forgotten_keys += forgotten
            return True
        if not stream:
            return False
        length = await replies.answer(redis.xlen(self.key))
        if length <= 1:
            return False
        self.memory_trims += 1
        await replies.answer(redis.xtrim(self.key, maxlen=length // 2, approximate=False))
        return True

    async def _append(self, batch):
        redis = self.replies.redis
        if len(batch) == 1 and type(batch[0]) is str:
            return [await redis.xadd(self.key, {FIELD: batch[0]}, maxlen=self.maxlen, approximate=True)]
        pipe = redis.pipeline(transaction=True)
        for entry in batch:
            if type(entry) is str:
                pipe.xadd(self.key, {FIELD: entry}, maxlen=self.maxlen, approximate=True)
            elif type(entry) is Count:
                await self._queue_count(pipe, entry)
            else:
                await self._queue_append(pipe, entry)
        try:
            return await pipe.execute(raise_on_error=False)
        finally:
            # redis-py keeps the connection it loaded the scripts on when that fails: give it back,
            # or the writes' pool of one would have none left.
            await pipe.reset()

    async def _queue_append(self, pipe, append):
        """Queue ``append`` (an :class:`Append`) on ``pipe``: an XADD, or the script
        :data:`room_in_redis.PUBLISH_ONCE`."""
        once = append.once
        if once is None:
            pipe.xadd(self.key, {FIELD: append.encoded, KEY_FIELD: append.key}, maxlen=self.maxlen, approximate=True)
            return
        # Queued, not sent: awaiting a script on a pipeline returns the pipeline.
        await self._publish_once(keys=[self.once_records, self.key, self.once_order],
                                 args=append.arguments(self.maxlen), client=pipe)

    async def _queue_count(self, pipe, count):
        """Queue ``count`` (a :class:`Count`) on ``pipe``: the script :data:`room_in_redis.COUNT`."""
        await self._count(keys=[self.once_records, self.key, self.counters_key, self.once_order],
                          args=count.arguments(self.maxlen), client=pipe)
