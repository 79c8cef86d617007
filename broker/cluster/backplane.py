"""The cluster backplane: brokers share one room through a Redis Stream.

Rules this module keeps (its bookkeeping is :mod:`broker.cluster.state`):

* One stream per room. A message published at this broker (by a client or
  ``POST /publish``) is appended with XADD, trimmed to about
  :data:`STREAM_MAXLEN` entries, as its JSON text: encoded once, by the hub,
  and never again on the way through Redis.
* What the hub hands over in one event-loop iteration goes out as one XADD,
  or for several messages one MULTI/EXEC transaction. Redis appends its
  entries at once, so the blocked XREAD of every broker gets them in one
  reply (one batch, one frame); a plain pipeline would wake the readers after
  its first XADD. At most one write is in flight, so the messages of one
  publisher reach the stream in the order they were published.
* Nothing is delivered from here to the hub but what a blocking XREAD returns,
  from the last id delivered: every broker delivers the stream's order, and
  what one XREAD returns is one hub batch (one encode, one frame per batch).
* A message's offset is its stream id, the same on every broker. A message
  with a conflating key carries it in a second field (:mod:`broker.cluster.room_in_redis`).
  The room's epoch is a token kept beside the stream, set once (SET NX) by the first
  broker to look: a Redis that comes back without its data (no persistence)
  comes back without it, and the next broker to look sets another, which
  tells the clients resuming that the history is lost.
* At start, and after an outage in which the epoch changed, the stream's
  tail (XREVRANGE, the hub's ``history`` messages) fills the hub's history
  and sets where reading starts, so a broker started later replays and
  resumes what other brokers published before it. The history starts after
  the entry before that tail; when the stream holds no more than the tail,
  after the newest entry trimmed from it (XINFO STREAM), or at its
  beginning if none was.
* While the broker keeps up, a read is one blocking XREAD. When one comes
  back full (the broker is behind, and the trim may overtake it), or while
  its position in the stream is unknown (at start, after an outage), the read
  is made again inside MULTI with XINFO STREAM, so that entries trimmed
  before this broker read them are counted (:mod:`broker.cluster.state`) and logged:
  a broker too slow for the stream's length cannot lose messages unseen.
* A Redis that does not answer within REPLY_TIMEOUT_S (stopped, or out of
  reach without a reset) has failed: the connections are aborted, which fails
  what waits on them, a write the kernel could not buffer included (what it
  still held unsent is dropped, not flushed whenever Redis reads again). One
  timer per call, not redis-py's socket timeout, which costs a task and two
  timers per command.
* A publish with an idempotency key (:mod:`broker.core.idempotency`) is
  appended by one script that looks for the key and sets it with the
  message's id: a retry finds it on any broker, and nothing is appended
  twice even when the first answer was lost. It goes in the same
  transaction as the messages around it, in their order.
* A counter's operation (:mod:`broker.core.counters`) is one script
  (:data:`broker.cluster.room_in_redis.COUNT`) in the transaction with the
  messages around it: the idempotency key, the total, the entry that carries
  it, all at once. So every broker adds to one total, a retry finds its key
  on any broker, and the stream carries the totals in the order they were
  made. A broker loads every counter's latest message with the stream's
  tail, and again when Redis answers after an outage.
* When Redis fails, the backplane is down: messages are refused (the hub's
  publisher sees :class:`broker.core.seams.RelayUnavailable`), clients stay connected,
  and the reader retries with backoff; once Redis answers it resumes after the
  last id it delivered, so what Redis still holds is neither lost nor
  delivered twice. A transaction that fails fails the ``POST /publish`` requests
  waiting on it; whether Redis applied it first cannot be known.
* Every AUDIENCE_REPORT_S each broker reports how many it serves to one hash
  beside the stream and reads back the room's total and how many brokers
  make it, in one script that also
  drops the brokers silent for AUDIENCE_STALE_MS (one that died, or lost
  Redis) and times them by Redis's clock, not the brokers'. Until a report
  succeeds, and while Redis is down, the room's total and its brokers are
  unknown (None).

The stream is trusted: only brokers write to it, and an entry's text goes to
every client as it is.
"""

import asyncio
import logging
import secrets
import time
from typing import NamedTuple, Optional

import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as NoAnswer

from broker import _internals
from broker.cluster import room_in_redis
from broker.cluster.room_in_redis import FIELD, KEY_FIELD
from broker.cluster.state import Backoff, BackplaneState
from broker.core import counters
from broker.core.figures import KEYED_GAUGES, Figure, Metric

LOG = logging.getLogger("broker.cluster.backplane")

STREAM_MAXLEN = 10000
READ_COUNT = 1000
BLOCK_MS = 1000
# A blocked XREAD answers within BLOCK_MS; a Redis silent for longer than this is taken as gone.
REPLY_TIMEOUT_S = BLOCK_MS / 1000.0 + 2.0
# What a reply that was waiting in the socket when the timeout fired may take to be read.
SILENCE_CHECK_S = 0.1
FAILURES = (RedisError, OSError)
AUDIENCE_REPORT_S = 1.0
AUDIENCE_STALE_MS = 3000


class Count(NamedTuple):
    """A counter's operation waiting for the next transaction (see :meth:`Backplane.count`)."""

    name: str
    operation: str
    given: counters.Amount
    idempotent: Optional[tuple]


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _redis_failure(error):
    """How ``error``, from a call to Redis, is reported."""
    return "Redis: %s" % (error or type(error).__name__)


class Backplane:
    """The room's stream at the Redis of ``url``; the hub's relay once :meth:`start` ran."""

    def __init__(self, url, prefix, history=0):
        self.state = BackplaneState(room_in_redis.stream_key(prefix), lambda: int(time.time() * 1000))
        self.key = self.state.key
        self.epoch_key = room_in_redis.epoch_key(prefix)
        self.history = history
        self.maxlen = max(STREAM_MAXLEN, history + 1)
        # No retries inside the client: the reader reconnects with its own backoff, and a
        # failed publish is answered at once. No socket timeout: see :meth:`_answer`.
        self._redis = redis.asyncio.from_url(
            url, socket_connect_timeout=REPLY_TIMEOUT_S, retry=Retry(NoBackoff(), 0), lib_name=None,
            lib_version=None)
        self.audience_key = room_in_redis.audience_key(prefix)
        self.counters_key = room_in_redis.counters_key(prefix)
        self._count = self._redis.register_script(room_in_redis.COUNT)
        self.broker_id = secrets.token_hex(8)
        self.room_audience = None
        self.room_brokers = None
        self._report = self._redis.register_script(room_in_redis.AUDIENCE_REPORT)
        self._publish_once = self._redis.register_script(room_in_redis.PUBLISH_ONCE)
        self.once_prefix = room_in_redis.stream_key(prefix) + ":once:"
        self._report_task = None
        self._reconnect_backoff = Backoff()
        self._silences = 0
        self._disconnecting = None
        self._hub = None
        self._pending = []
        self._waiting_ids = []
        self._write_task = None
        self._read_task = None
        self._stopping = None

    async def start(self, hub):
        """Deliver to ``hub`` from now on: read the stream's tail once (so that
        replay is ready before the broker listens), then keep reading."""
        self._hub = hub
        self._stopping = asyncio.Event()
        try:
            await self._load_tail()
        except FAILURES as error:
            self._went_down(error)
        self._read_task = asyncio.ensure_future(self._read_forever())
        self._report_task = asyncio.ensure_future(self._report_forever())

    async def stop(self):
        """Let the transaction in flight finish, close the connections, stop reading.

        Closing ends the blocked XREAD at once; cancelling the reader instead
        can leave it stuck inside redis-py (seen with 6.4 on CPython 3.11).
        """
        self._stopping.set()
        if self._write_task is not None:
            await asyncio.gather(self._write_task, return_exceptions=True)
        await asyncio.gather(self._report_task, return_exceptions=True)
        try:  # leave the count at once, rather than after AUDIENCE_STALE_MS
            await self._answer(self._redis.hdel(self.audience_key, self.broker_id))
        except FAILURES:
            pass
        await self._redis.aclose()
        await asyncio.gather(self._read_task, return_exceptions=True)

    def append(self, encoded, idempotent=None, key=None):
        """Queue one JSON text for the next transaction (the hub's relay); raises
        :class:`broker.core.seams.RelayUnavailable` while Redis is not up.
        ``idempotent``: ``(idempotency key, record, window_s)`` to append it only if
        that key was not seen, keeping ``record`` and its id; ``key``: its
        conflating key."""
        self._add_pending(encoded if idempotent is None and key is None else (encoded, idempotent, key))

    def count(self, name, operation, given, idempotent=None):
        """Queue ``operation`` (``add``, ``max``) with ``given`` (a
        :class:`broker.core.counters.Amount`) on counter ``name`` for the next
        transaction, as :meth:`append` queues a message; :meth:`written` then gives
        ``(status, text)``, a status of :mod:`broker.core.counters` (see :data:`room_in_redis.COUNT`)."""
        self._add_pending(Count(name, operation, given, idempotent))

    def _add_pending(self, entry):
        if not self.state.is_up:
            raise self.state.refuse()
        self._pending.append(entry)
        if self._write_task is None:
            self._write_task = asyncio.ensure_future(self._write())

    def written(self):
        """A future of the stream id (its offset) of the message appended last,
        done once it is in the stream, or failing with
        :class:`broker.core.seams.RelayUnavailable`; for one appended with
        ``idempotent``, ``(True, id)``, or ``(False, "record id")`` when the key was seen."""
        future = asyncio.get_running_loop().create_future()
        self._waiting_ids.append((len(self._pending) - 1, future))
        return future

    def stats(self):
        return self.state.stats()

    FIGURES = (Figure("", lambda backplane: backplane.stats(), Metric("backplane", KEYED_GAUGES, "The backplane's")),)

    async def _write(self):
        # A task's first step runs in the next loop iteration: by then the whole
        # iteration's messages are pending, and go in one write.
        try:
            while self._pending:
                batch, waiting = self._pending, self._waiting_ids
                self._pending, self._waiting_ids = [], []
                try:
                    ids = await self._answer(self._append(batch))
                except FAILURES as error:
                    LOG.warning("%d messages not published: %s", len(batch), error)
                    refused = self.state.refuse(len(batch), _redis_failure(error))
                    for _, future in waiting:
                        future.set_exception(refused)
                else:
                    errors = {i: reply for i, reply in enumerate(ids) if isinstance(reply, Exception)}
                    self.state.published += len(batch) - len(errors)
                    if errors:
                        error = next(iter(errors.values()))
                        LOG.warning("%d of %d messages not published: %s", len(errors), len(batch), error)
                        refused = self.state.refuse(len(errors), _redis_failure(error))
                    for index, future in waiting:
                        if index in errors:
                            future.set_exception(refused)
                        else:
                            future.set_result(room_in_redis.written(ids[index]))
        finally:
            self._write_task = None

    async def _append(self, batch):
        """Append ``batch``: one reply for each of its entries."""
        if len(batch) == 1 and type(batch[0]) is str:
            return [await self._redis.xadd(self.key, {FIELD: batch[0]}, maxlen=self.maxlen, approximate=True)]
        pipe = self._redis.pipeline(transaction=True)
        for entry in batch:
            if type(entry) is str:
                pipe.xadd(self.key, {FIELD: entry}, maxlen=self.maxlen, approximate=True)
                continue
            if type(entry) is Count:
                await self._queue_count(pipe, entry)
                continue
            encoded, idempotent, key = entry
            if idempotent is None:
                pipe.xadd(self.key, {FIELD: encoded, KEY_FIELD: key}, maxlen=self.maxlen, approximate=True)
            else:
                idempotency_key, record, window_s = idempotent
                # Queued, not sent: awaiting a script on a pipeline returns the pipeline.
                await self._publish_once(keys=[self.once_prefix + idempotency_key, self.key],
                                         args=[record, encoded, self.maxlen, max(1, int(window_s * 1000)),
                                               key or ""], client=pipe)
        # Each entry its own reply: Redis applies the others of a transaction when one fails.
        return await pipe.execute(raise_on_error=False)

    async def _queue_count(self, pipe, count):
        """Queue ``count`` (a :class:`Count`) on ``pipe``: the script :data:`room_in_redis.COUNT`."""
        record, window_ms, once_key = "", 1, self.key
        if count.idempotent is not None:
            idempotency_key, record, window_s = count.idempotent
            once_key, window_ms = self.once_prefix + idempotency_key, max(1, int(window_s * 1000))
        name = count.name
        await self._count(keys=[once_key, self.key, self.counters_key],
                          args=[count.operation, name, counters.units(count.given.value), count.given.scale,
                                counters.message_prefix(name), self.maxlen, record, window_ms,
                                counters.conflating_key(name), counters.MAX_COUNTERS, room_in_redis.COUNTED_DIGITS,
                                counters.TOO_MANY, counters.OVER_BOUNDS], client=pipe)

    async def _answer(self, call):
        """What ``call`` (a coroutine on Redis) returns; if Redis does not answer
        within REPLY_TIMEOUT_S, the connections are closed, and it fails with
        redis-py's TimeoutError, as does every call they fail.

        When the timer fires, the verdict waits SILENCE_CHECK_S more: after a stall of
        this process (a long collection, a busy moment) the answer may be waiting in
        the socket already, read and parsed a few loop iterations later. An answer
        there is not a silence."""
        silences = self._silences
        answered = []
        loop = asyncio.get_running_loop()
        timer = loop.call_later(REPLY_TIMEOUT_S, loop.call_later, SILENCE_CHECK_S, self._silent, answered)
        try:
            return await call
        except FAILURES:
            if self._silences != silences:
                raise NoAnswer("no answer within %g s" % REPLY_TIMEOUT_S) from None
            raise
        finally:
            answered.append(True)
            timer.cancel()

    def _silent(self, answered):
        if answered:
            return
        self._silences += 1
        _internals.abort_redis_connections(self._redis.connection_pool)
        self._disconnecting = asyncio.ensure_future(self._disconnect())

    async def _disconnect(self):
        try:
            await self._redis.connection_pool.disconnect()
        except FAILURES:  # closed all the same
            pass

    async def _epoch(self):
        """The room's epoch, set here if no broker has set it (see the module's rules)."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self.epoch_key, secrets.token_urlsafe(6), nx=True)
        pipe.get(self.epoch_key)
        return (await self._answer(pipe.execute()))[1].decode()

    async def _load_tail(self):
        epoch = await self._epoch()
        pipe = self._redis.pipeline(transaction=True)
        pipe.xrevrange(self.key, count=self.history + 1)
        pipe.xinfo_stream(self.key)
        pipe.hgetall(self.counters_key)
        entries, info, counted = await self._answer(pipe.execute(raise_on_error=False))
        for reply in (entries, counted):
            if isinstance(reply, Exception):
                raise reply
        entries.reverse()
        kept = entries[-self.history:] if self.history else []
        before = entries[:len(entries) - len(kept)]
        if before:
            start = before[-1][0].decode()
        elif isinstance(info, Exception) or info["entries-added"] == info["length"]:
            start = "0-0"  # no stream yet, or none of it trimmed
        else:
            start = _text(info["max-deleted-entry-id"])
        self._hub.load(epoch, start, [entry_id.decode() for entry_id, _ in kept],
                       [fields[FIELD].decode() for _, fields in kept], room_in_redis.keys_of(kept),
                       room_in_redis.latest_counters(counted))
        self.state.read(entries[-1][0].decode() if entries else "0-0")
        self._came_up()

    async def _resume(self):
        """Redis answers again: read on after the last id delivered, unless its
        epoch changed (its data was lost), and then from its stream's tail."""
        if await self._epoch() != self._hub.epoch:
            LOG.warning("the room's epoch changed in Redis (it lost its data): its history starts again")
            await self._load_tail()
        else:
            counted = await self._answer(self._redis.hgetall(self.counters_key))
            self._hub.counters.load(room_in_redis.latest_counters(counted))
            self._hub.confirm_epoch()
            self._came_up()

    async def _read_forever(self):
        while not self._stopping.is_set():
            try:
                if self.state.last_id is None:
                    await self._load_tail()
                elif not self.state.is_up:
                    await self._resume()
                entries = await self._read()
            except FAILURES as error:
                if self._stopping.is_set():
                    return
                self._went_down(error)
                try:
                    await asyncio.wait_for(self._stopping.wait(), self._reconnect_backoff.next())
                except asyncio.TimeoutError:
                    pass
                continue
            if entries:
                self._deliver(entries)

    async def _report_forever(self):
        while not self._stopping.is_set():
            try:
                total, brokers = await self._answer(self._report(
                    keys=[self.audience_key], args=[self.broker_id, len(self._hub), AUDIENCE_STALE_MS]))
                self.room_audience, self.room_brokers = int(total), int(brokers)
            except FAILURES:
                self.room_audience = self.room_brokers = None
            except Exception:
                # As for any event-loop callback: log it, and the reporting goes on.
                LOG.exception("reporting the audience to %s failed", self.audience_key)
                self.room_audience = self.room_brokers = None
            try:
                await asyncio.wait_for(self._stopping.wait(), AUDIENCE_REPORT_S)
            except asyncio.TimeoutError:
                pass

    async def _read(self):
        """The entries after ``last_id``: see the module's rules for when the read is counted."""
        if self.state.position is not None:
            reply = await self._answer(self._redis.xread({self.key: self.state.last_id}, count=READ_COUNT,
                                                         block=BLOCK_MS))
            if not reply or len(reply[0][1]) < READ_COUNT:
                return reply[0][1] if reply else []
        pipe = self._redis.pipeline(transaction=True)
        pipe.xinfo_stream(self.key)
        pipe.xread({self.key: self.state.last_id}, count=READ_COUNT)
        info, reply = await self._answer(pipe.execute(raise_on_error=False))
        if isinstance(reply, Exception):
            raise reply
        entries = reply[0][1] if reply else []
        if isinstance(info, Exception):  # no stream yet: nothing was ever added
            info = {"entries-added": 0, "length": 0}
        lost = self.state.counted(len(entries), len(entries) == READ_COUNT, info["entries-added"], info["length"])
        if lost:
            LOG.warning("%d messages were trimmed from stream %s before this broker read them (it fell more "
                        "than %d behind): its clients missed them", lost, self.key, self.maxlen)
        return entries

    def _deliver(self, entries):
        age = self.state.deliver(entries[0][0].decode(), entries[-1][0].decode(), len(entries))
        try:
            self._hub.deliver([fields[FIELD].decode() for _, fields in entries],
                              [entry_id.decode() for entry_id, _ in entries], age, room_in_redis.keys_of(entries))
        except Exception:
            # As for any event-loop callback: log it, and the reading goes on.
            LOG.exception("delivering %d messages up to %s failed", len(entries), self.state.last_id)

    def _came_up(self):
        self._reconnect_backoff.reset()
        if self.state.came_up():
            LOG.info("backplane up: stream %s, resuming after %s", self.key, self.state.last_id)

    def _went_down(self, error):
        self._hub.doubt_epoch()
        reason = _redis_failure(error)
        if self.state.went_down(reason):
            LOG.warning("backplane down (%s); clients stay connected, publishing is refused", reason)
