"""The backplane's writes: what the hub hands over, appended to the room's stream in one step.

Rules this module keeps (the backplane, :mod:`broker.cluster.backplane`,
queues and answers; this module writes):

* A batch of one entry is one command (an XADD, or a script: one step
  already), or for several entries one MULTI/EXEC transaction:
  Redis appends its entries at once, so the blocked XREAD of every broker
  gets them in one reply. Each entry has its own reply: Redis applies the
  others of a transaction when one fails at run time.
* A script goes by its SHA1 alone (EVALSHA, :class:`Script`), never asked
  about first (redis-py asks ``SCRIPT EXISTS`` before every transaction that
  holds a script object: a command more a write). A Redis that lost it (a
  new master after a failover, ``SCRIPT FLUSH``) refuses it, NOSCRIPT,
  having run none of it: the writer's scripts are loaded, in one
  transaction, and the batch written again from its first entry refused,
  when every entry after it was refused too (:func:`by_sha`); else, an
  entry after it taken, those refused stay refused, so that none is
  written out of its order.
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
  the transaction (what a transaction took before them stays). The rooms
  written then give memory back, and the batch is tried again from its
  first entry refused, in order, until it is taken or nothing is left to
  give (:meth:`MemoryGiver.write`). One :class:`MemoryGiver` gives for every
  room of a broker, the default room's and the named rooms'
  (:mod:`broker.cluster.room_writes`), one at a time, counted once
  (``memory_forgotten_keys``, ``memory_trims``). Each step gives one room's:
  first the oldest half of the idempotency records of a room written, or else
  of the room most recently given one among the :data:`KNOWN_ROOMS` the
  broker gave one within its window (a retry after them may publish twice:
  counted); then half the stream of a room written (exactly, not by whole
  nodes), down to one entry; never another room's stream: a busy room gives
  its own history, not everyone's. The stream's own trim rides on the next
  XADD, which Redis refuses, so without this a full Redis would stay full;
  and keys kept for a window would stop every publish, with a key or
  without, for as long as they live. What is cut of the stream is the
  oldest, as a trim would: a broker that had not read it tells its clients a
  gap, and one loading the room's tail starts its history after the cut.
"""

import asyncio
import collections
import hashlib
import time
from typing import NamedTuple, Optional

from redis.exceptions import NoScriptError, OutOfMemoryError, RedisError

from broker.cluster import room_in_redis
from broker.cluster.room_in_redis import FIELD, KEY_FIELD
from broker.core import counters, idempotency

# How long a transaction's WAIT waits for the replicas.
REPLICA_WAIT_MS = 1000
# The rooms whose idempotency records a write in another room may give back: those most recently
# given one (a pipeline of as many ZCARDs when Redis refuses a write for memory).
KNOWN_ROOMS = 1000


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


class Script(NamedTuple):
    """A Lua script, its ``text`` and the ``sha`` Redis knows it by, queued by that alone (see the module's rules)."""

    text: str
    sha: str

    @classmethod
    def of(cls, text):
        return cls(text, hashlib.sha1(text.encode()).hexdigest())

    def queue(self, pipe, keys, args):
        """Queue this script on ``pipe`` with ``keys`` and ``args``: its reply NOSCRIPT when Redis lost it."""
        pipe.evalsha(self.sha, len(keys), *keys, *args)


async def by_sha(replies, scripts, transaction, batch):
    """The replies to ``batch``, one an entry, written through ``replies`` by ``transaction(batch)``
    (a coroutine queuing ``scripts``, :class:`Script` s, by their SHA1), which are loaded when
    Redis lost one, and ``batch`` written again from its first entry refused so (see the
    module's rules)."""
    answered = await transaction(batch)
    lost = next((i for i, reply in enumerate(answered) if isinstance(reply, NoScriptError)), None)
    if lost is None:
        return answered
    pipe = replies.redis.pipeline(transaction=True)  # loaded at once, for every transaction after
    for script in scripts:
        pipe.script_load(script.text)
    await pipe.execute()
    if not all(isinstance(reply, NoScriptError) for reply in answered[lost:]):
        return answered
    return answered[:lost] + await transaction(batch[lost:])


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


def for_memory(reply):
    """Whether ``reply`` (or an error raised) is Redis refusing a write for memory."""
    return isinstance(reply, OutOfMemoryError)


class RoomMemory(NamedTuple):
    """The keys a room gives memory back from: its ``stream``, its idempotency records' hash
    (``once_records``) and sorted set (``once_order``); a
    :class:`broker.cluster.named_rooms.RoomKeys` has them too."""

    stream: str
    once_records: str
    once_order: str

    @classmethod
    def of(cls, prefix):
        """The keys of the room served at ``prefix`` (the default room)."""
        return cls(room_in_redis.stream_key(prefix), room_in_redis.once_records_key(prefix),
                   room_in_redis.once_order_key(prefix))


class MemoryGiver:
    """What the rooms of a broker give back to a Redis refusing writes for memory (see the
    module's rules): idempotency records forgotten (``memory_forgotten_keys``), streams cut
    (``memory_trims``)."""

    def __init__(self):
        self.memory_trims = 0
        self.memory_forgotten_keys = 0
        self._recording = collections.OrderedDict()  # a room's keys: when its records are gone (time.monotonic())
        self._giving = asyncio.Lock()
        self._given = 0

    def recording(self, room, window_s):
        """``room`` (its keys, as :class:`RoomMemory`'s) is given an idempotency record, kept for ``window_s``."""
        now = time.monotonic()
        known = self._recording
        known[room] = now + window_s
        known.move_to_end(room)
        while known and (len(known) > KNOWN_ROOMS or next(iter(known.values())) <= now):
            known.popitem(last=False)

    async def write(self, replies, batch, transaction, rooms_of):
        """The replies to ``batch``, one an entry, written through ``replies`` by
        ``transaction(batch)`` (a coroutine raising what fails it whole), ``rooms_of(batch)`` the
        rooms' keys it writes in: refused for memory, it is written again from its first entry
        refused once memory was given back (see the module's rules)."""
        written = []
        while True:
            try:
                answered = await replies.answer(transaction(batch))
            except OutOfMemoryError:
                if not await self.give(replies, rooms_of(batch)):
                    raise
                continue
            taken = next((i for i, reply in enumerate(answered) if for_memory(reply)), len(answered))
            written += answered[:taken]
            batch, refused = batch[taken:], answered[taken:]
            if not batch or not all(map(for_memory, refused)) or \
                    not await self.give(replies, rooms_of(batch)):
                return written + refused

    async def give(self, replies, rooms, stream=True):
        """Through ``replies``, give back one room's memory for a write in ``rooms`` (their keys,
        as :class:`RoomMemory`'s, the first written first), as the module's rules say, its streams
        only when ``stream``; False when there was nothing to give. Only commands that Redis
        runs while it refuses writes for memory. One at a time: a caller that waited for
        another's gives nothing more, and is told it was given."""
        asked = self._given
        async with self._giving:
            if self._given != asked:
                return True
            given = await self._give(replies, rooms, stream)
            self._given += given
            return given

    async def _give(self, replies, rooms, stream):
        redis = replies.redis
        written = set(rooms)
        holders = list(rooms) + [room for room in reversed(self._recording) if room not in written]
        records, room = await _first_over(replies, lambda pipe, room: pipe.zcard(room.once_order), holders, 0)
        if records:
            fields = await replies.answer(redis.zrange(room.once_order, 0, max(1, records // 2) - 1))
            # Not a transaction: Redis refuses to queue one while it refuses writes for memory.
            # The record first: an order entry left without it is only forgotten again later.
            pipe = redis.pipeline(transaction=False)
            pipe.hdel(room.once_records, *fields)
            pipe.zrem(room.once_order, *fields)
            forgotten, _ = await replies.answer(pipe.execute())
            self.memory_forgotten_keys += forgotten
            return True
        if not stream:
            return False
        length, room = await _first_over(replies, lambda pipe, room: pipe.xlen(room.stream), rooms, 1)
        if not length:
            return False
        self.memory_trims += 1
        await replies.answer(redis.xtrim(room.stream, maxlen=length // 2, approximate=False))
        return True


async def _first_over(replies, asked, rooms, least):
    """The first answer over ``least`` to ``asked(pipeline, room)`` (a command it queues) for each of
    ``rooms``, all in one pipeline, and its room; (0, None) for none."""
    pipe = replies.redis.pipeline(transaction=False)
    for room in rooms:
        asked(pipe, room)
    answers = await replies.answer(pipe.execute())
    return next(((answer, room) for answer, room in zip(answers, rooms) if answer > least), (0, None))


class Appends:
    """Batches appended to the stream of the room at ``prefix``, trimmed to about
    ``maxlen`` entries, through ``replies`` (a :class:`broker.cluster.replies.Replies`
    of one connection), each acknowledged by ``min_replicas`` replicas; Redis given memory back
    by its ``memory`` (a :class:`MemoryGiver`, which the named rooms share)."""

    def __init__(self, replies, prefix, maxlen, min_replicas):
        self.replies = replies
        self.room = RoomMemory.of(prefix)
        self.key = self.room.stream
        self.maxlen = maxlen
        self.min_replicas = min_replicas
        self.once_records = self.room.once_records
        self.once_order = self.room.once_order
        self.counters_key = room_in_redis.counters_key(prefix)
        self.memory = MemoryGiver()
        self._publish_once = Script.of(room_in_redis.PUBLISH_ONCE)
        self._count = Script.of(room_in_redis.COUNT)

    @property
    def memory_trims(self):
        """Streams cut for memory, the named rooms' too (:class:`MemoryGiver`)."""
        return self.memory.memory_trims

    @property
    def memory_forgotten_keys(self):
        """Idempotency records forgotten for memory, the named rooms' too (:class:`MemoryGiver`)."""
        return self.memory.memory_forgotten_keys

    async def write(self, batch):
        """Append ``batch``: one reply for each of its entries; raises what failed it whole."""
        replies = await self.memory.write(self.replies, batch, self._written, lambda _: [self.room])
        await replicated(self.replies, self.min_replicas)
        return replies

    async def give_memory(self, replies, stream=True):
        """Through ``replies``, give Redis memory back as a write in this room would
        (:meth:`MemoryGiver.give`); False when nothing was given."""
        return await self.memory.give(replies, [self.room], stream)

    async def _written(self, batch):
        return await by_sha(self.replies, (self._publish_once, self._count), self._append, batch)

    async def _append(self, batch):
        redis = self.replies.redis
        if len(batch) == 1 and type(batch[0]) is str:
            return [await redis.xadd(self.key, {FIELD: batch[0]}, maxlen=self.maxlen, approximate=True)]
        pipe = redis.pipeline(transaction=len(batch) > 1)  # a script alone is one step already
        for entry in batch:
            if type(entry) is str:
                pipe.xadd(self.key, {FIELD: entry}, maxlen=self.maxlen, approximate=True)
            elif type(entry) is Count:
                self._queue_count(pipe, entry)
            else:
                self._queue_append(pipe, entry)
        return await pipe.execute(raise_on_error=False)

    def _queue_append(self, pipe, append):
        """Queue ``append`` (an :class:`Append`) on ``pipe``: an XADD, or the script
        :data:`room_in_redis.PUBLISH_ONCE`."""
        once = append.once
        if once is None:
            pipe.xadd(self.key, {FIELD: append.encoded, KEY_FIELD: append.key}, maxlen=self.maxlen, approximate=True)
            return
        self.memory.recording(self.room, once.window_s)
        self._publish_once.queue(pipe, [self.once_records, self.key, self.once_order], append.arguments(self.maxlen))

    def _queue_count(self, pipe, count):
        """Queue ``count`` (a :class:`Count`) on ``pipe``: the script :data:`room_in_redis.COUNT`."""
        if count.once is not None:
            self.memory.recording(self.room, count.once.window_s)
        self._count.queue(pipe, [self.once_records, self.key, self.counters_key, self.once_order],
                          count.arguments(self.maxlen))
