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
  with a conflating key carries it in a second field, :data:`KEY_FIELD`. The room's
  epoch is a token kept beside the stream, set once (SET NX) by the first
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
  appended by one script that first looks for the key beside the stream and
  sets it with the message's id: a retry finds it, whichever broker it
  reaches, and nothing is appended twice even when the first answer was
  lost on the way back. It goes in the same transaction as the messages
  around it, in their order.
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

import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as NoAnswer

from broker import _internals
from broker.cluster.state import Backoff, BackplaneState
from broker.core.figures import KEYED_GAUGES, Figure, Metric

LOG = logging.getLogger("broker.cluster.backplane")

STREAM_MAXLEN = 10000
READ_COUNT = 1000
BLOCK_MS = 1000
# A blocked XREAD answers within BLOCK_MS; a Redis silent for longer than this is taken as gone.
REPLY_TIMEOUT_S = BLOCK_MS / 1000.0 + 2.0
# What a reply that was waiting in the socket when the timeout fired may take to be read.
SILENCE_CHECK_S = 0.1
FIELD = b"m"
KEY_FIELD = b"k"
FAILURES = (RedisError, OSError)
# KEYS[1]: the idempotency key, KEYS[2]: the stream; ARGV: the record to keep (the answer
# but the id), the message, the stream's MAXLEN, the window in ms, the conflating key or "".
# Returns {1, id} when appended, {0, record} when the key was seen.
PUBLISH_ONCE = """
local seen = redis.call('GET', KEYS[1])
if seen then return {0, seen} end
local id
if ARGV[5] == '' then
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'm', ARGV[2])
else
  id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'm', ARGV[2], 'k', ARGV[5])
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. id, 'PX', ARGV[4])
return {1, id}
"""
AUDIENCE_REPORT_S = 1.0
AUDIENCE_STALE_MS = 3000
# KEYS[1]: the room's audience hash; ARGV: this broker's id, its count, the staleness in ms.
# Each field holds "count:milliseconds" by Redis's clock; the total, and the brokers counted,
# are of the fresh ones.
AUDIENCE_REPORT = """
local now = redis.call('TIME')
local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ':' .. now_ms)
local total = 0
local brokers = 0
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  local count, at = string.match(fields[i + 1], '^(%d+):(%d+)$')
  if count and now_ms - tonumber(at) <= tonumber(ARGV[3]) then
    total = total + tonumber(count)
    brokers = brokers + 1
  else
    redis.call('HDEL', KEYS[1], fields[i])
  end
end
redis.call('PEXPIRE', KEYS[1], 10 * tonumber(ARGV[3]))
return {total, brokers}
"""


def stream_key(prefix):
    """The Redis key of the room served at ``prefix``."""
    return "sockjs-broker:" + prefix


def epoch_key(prefix):
    """The Redis key of the epoch of the room served at ``prefix``."""
    return stream_key(prefix) + ":epoch"


def audience_key(prefix):
    """The Redis key of the audience of the room served at ``prefix``."""
    return stream_key(prefix) + ":audience"


def _keys(entries):
    """The conflating keys of stream ``entries``, or None when none has one."""
    if not any(KEY_FIELD in fields for _, fields in entries):
        return None
    return [fields[KEY_FIELD].decode() if KEY_FIELD in fields else None for _, fields in entries]


def _text(value):
    return value.decode() if isinstance(value, bytes) else str(value)


def _written(reply):
    """What :meth:`Backplane.written` gives for one entry's ``reply``."""
    if type(reply) is bytes:
        return reply.decode()
    appended, text = reply
    return bool(appended), text.decode()


def _redis_failure(error):
    """How ``error``, from a call to Redis, is reported."""
    return "Redis: %s" % (error or type(error).__name__)


class Backplane:
    """The room's stream at the Redis of ``url``; the hub's relay once :meth:`start` ran."""

    def __init__(self, url, prefix, history=0):
        self.state = BackplaneState(stream_key(prefix), lambda: int(time.time() * 1000))
        self.key = self.state.key
        self.epoch_key = epoch_key(prefix)
        self.history = history
        self.maxlen = max(STREAM_MAXLEN, history + 1)
        # No retries inside the client: the reader reconnects with its own backoff, and a
        # failed publish is answered at once. No socket timeout: see :meth:`_answer`.
        self._redis = redis.asyncio.from_url(
            url, socket_connect_timeout=REPLY_TIMEOUT_S, retry=Retry(NoBackoff(), 0), lib_name=None,
            lib_version=None)
        self.audience_key = audience_key(prefix)
        self.broker_id = secrets.token_hex(8)
        self.room_audience = None
        self.room_brokers = None
        self._report = self._redis.register_script(AUDIENCE_REPORT)
        self._publish_once = self._redis.register_script(PUBLISH_ONCE)
        self.once_prefix = stream_key(prefix) + ":once:"
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

    def append(self, encoded, once=None, key=None):
        """Queue one JSON text for the next transaction (the hub's relay); raises
        :class:`broker.core.seams.RelayUnavailable` while Redis is not up.
        ``once``: ``(idempotency key, record, window_s)`` to append it only if
        that key was not seen, keeping ``record`` and its id; ``key``: its
        conflating key."""
        if not self.state.is_up:
            raise self.state.refuse()
        self._pending.append(encoded if once is None and key is None else (encoded, once, key))
        if self._write_task is None:
            self._write_task = asyncio.ensure_future(self._write())

    def written(self):
        """A future of the stream id (its offset) of the message appended last,
        done once it is in the stream, or failing with
        :class:`broker.core.seams.RelayUnavailable`; for one appended with
        ``once``, ``(True, id)``, or ``(False, "record id")`` when the key was seen."""
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
                            future.set_result(_written(ids[index]))
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
            encoded, once, key = entry
            if once is None:
                pipe.xadd(self.key, {FIELD: encoded, KEY_FIELD: key}, maxlen=self.maxlen, approximate=True)
            else:
                idempotency_key, record, window_s = once
                # Queued, not sent: awaiting a script on a pipeline returns the pipeline.
                await self._publish_once(keys=[self.once_prefix + idempotency_key, self.key],
                                         args=[record, encoded, self.maxlen, max(1, int(window_s * 1000)),
                                               key or ""], client=pipe)
        # Each entry its own reply: Redis applies the others of a transaction when one fails.
        return await pipe.execute(raise_on_error=False)

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
        entries, info = await self._answer(pipe.execute(raise_on_error=False))
        if isinstance(entries, Exception):
            raise entries
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
                       [fields[FIELD].decode() for _, fields in kept], _keys(kept))
        self.state.read(entries[-1][0].decode() if entries else "0-0")
        self._came_up()

    async def _resume(self):
        """Redis answers again: read on after the last id delivered, unless its
        epoch changed (its data was lost), and then from its stream's tail."""
        if await self._epoch() != self._hub.epoch:
            LOG.warning("the room's epoch changed in Redis (it lost its data): its history starts again")
            await self._load_tail()
        else:
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
                              [entry_id.decode() for entry_id, _ in entries], age, _keys(entries))
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
