"""The cluster backplane: brokers share one room through a Redis Stream.

Rules this module keeps (its bookkeeping is :mod:`broker.cluster.state`):

* One stream per room. A message published at this broker (by a client or
  ``POST /publish``) is appended with XADD, trimmed to about
  :data:`STREAM_MAXLEN` entries, as its JSON text: encoded once, by the hub,
  and never again on the way through Redis.
* What the hub hands over in one event-loop iteration goes out as one
  write (:mod:`broker.cluster.appends`: one XADD or one transaction, then
  one WAIT for ``--redis-min-replicas``). Redis appends its entries at once,
  so the blocked XREAD of every broker gets them in one reply (one batch,
  one frame); a plain pipeline would wake the readers after its first XADD.
  At most one write is in flight, so the messages of one publisher reach the
  stream in the order they were published.
* ``--redis`` names one Redis, or Sentinels and the primary they watch
  (:mod:`broker.cluster.redis_address`): every connection made after a
  failover reaches the new primary.
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
  tail (:mod:`broker.cluster.tails`) fills the hub's history and sets where
  reading starts, so a broker started later replays and resumes what other
  brokers published before it.
* A read is one blocking XREAD after the last entry delivered, pipelined after an XRANGE that
  asks whether the stream still holds that entry (Redis runs the two back to back; while the
  broker keeps up, the XREAD waits, and a trim takes the oldest entries, never the newest). When
  it does not, the stream lost it: if entries after it were trimmed before this broker read them
  (it fell more than the stream's length behind), or it is not in the stream at all (a
  failover's new primary, or a Redis restarted from its disk, lacks what this broker delivered),
  its clients may have missed messages (:mod:`broker.cluster.state` judges). Then the broker
  loads the stream's tail as at start and tells every client a ``gap``, before anything after
  the loss: ``expired`` when trimmed; for a lost history, a new epoch for the room
  (:data:`room_in_redis.NEW_EPOCH`), which every other broker reads back within
  AUDIENCE_REPORT_S and follows. Nothing missed goes unsaid, and no offset silently jumps. What
  the read loop does next is :mod:`broker.cluster.lifecycle`'s answer to how its last step
  ended.
* Calls are timed (:mod:`broker.cluster.replies`): a Redis silent for
  REPLY_TIMEOUT_S has failed, its connections are dropped and opened again
  (through the Sentinels, where they are named). The read loop itself cannot
  stop quietly: a failure of its own is logged, counted and reading starts
  again after the last id delivered.
* Its audience report (:mod:`broker.cluster.audience_report`), a write of
  its own every second, is asked for by its reads: one that comes back is
  the round trip ``/healthz`` asks for (:mod:`broker.core.liveness`).
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
  tail, in one transaction, so never one ahead of that tail. After an outage
  it reads them from the stream like any message, after the last id it
  delivered: a counter loaded then could be ahead of everything it has sent,
  and a viewer opening before it caught up would be sent a total, then
  older messages.
* When Redis fails, the backplane is down: messages are refused (the hub's
  publisher sees :class:`broker.core.seams.RelayUnavailable`), clients stay connected,
  and the reader retries with backoff; once Redis answers it resumes after the
  last id it delivered, so what Redis still holds is neither lost nor
  delivered twice. A transaction that fails fails the ``POST /publish`` requests
  waiting on it; whether Redis applied it first cannot be known.
* The audience report (:mod:`broker.cluster.audience_report`): until one
  succeeds, and while Redis is down, the room's total and its brokers are
  unknown (None). It is a write: one Redis refuses for memory says so
  (``/healthz`` and ``/stats``) until one succeeds, even while nobody
  publishes, and gives Redis the room's oldest idempotency records.

The stream is trusted: only brokers write to it, and an entry's text goes to
every client as it is.
"""

import asyncio
import logging
import secrets
import time

from redis.exceptions import OutOfMemoryError, ResponseError

from broker.cluster import redis_address, room_in_redis, tails
from broker.cluster.appends import Append, Appends
from broker.cluster.audience_report import AUDIENCE_REPORT_S, AudienceReport
from broker.cluster.lifecycle import Lifecycle, LifecycleAction, LifecycleEvent
from broker.cluster.replies import BLOCK_MS, FAILURES, REPLY_TIMEOUT_S, Replies
from broker.cluster.room_in_redis import FIELD
from broker.cluster.state import Backoff, BackplaneState
from broker.cluster.tails import id_text
from broker.core.figures import KEYED_GAUGES, Figure, Metric
from broker.protocol import positions

LOG = logging.getLogger("broker.cluster.backplane")

STREAM_MAXLEN = 10000
READ_COUNT = 1000


def _redis_failure(error):
    """How ``error``, from a call to Redis, is reported."""
    return "Redis: %s" % (error or type(error).__name__)


class Backplane:
    """The room's stream at the Redis ``--redis`` names (``address``, its text); the hub's
    relay once :meth:`start` ran. ``min_replicas``: ``--redis-min-replicas`` (None: 1
    with Sentinels, else 0). Its ``liveness`` (a :class:`broker.core.liveness.Liveness`, once
    given) is told each time the broker's own audience report comes back through the read loop."""

    def __init__(self, address, prefix, history=0, min_replicas=None):
        self.state = BackplaneState(room_in_redis.stream_key(prefix), lambda: int(time.time() * 1000))
        self.key = self.state.key
        self.epoch_key = room_in_redis.epoch_key(prefix)
        self.history = history
        self.maxlen = max(STREAM_MAXLEN, history + 1)
        address = redis_address.parse(address)
        if min_replicas is None:
            min_replicas = 1 if address.has_sentinels else 0
        self._replies = Replies.to(address)
        self._redis = self._replies.redis
        writes = Replies.to(address, max_connections=1)
        self.appends = Appends(writes, prefix, self.maxlen, min_replicas)
        self.counters_key = room_in_redis.counters_key(prefix)
        self.report = AudienceReport(self._replies, prefix)
        self.liveness = None
        self.room_audience = None
        self.room_brokers = None
        self._new_epoch = self._redis.register_script(room_in_redis.NEW_EPOCH)
        self._report_task = None
        self._reconnect_backoff = Backoff()
        self._lifecycle = Lifecycle()
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
        try:
            await self.report.leave()
        except FAILURES:
            pass
        await self.appends.replies.redis.aclose()
        await self._redis.aclose()
        await asyncio.gather(self._read_task, return_exceptions=True)

    def append(self, encoded, key=None):
        """Queue one JSON text, of the conflating ``key`` if any, for the next transaction (the
        hub's relay); raises :class:`broker.core.seams.RelayUnavailable` while Redis is not up."""
        self.queue(encoded if key is None else Append(encoded, key))

    def queue(self, entry):
        """Queue ``entry`` (a JSON text, an :class:`broker.cluster.appends.Append` or a
        :class:`broker.cluster.appends.Count`) for the next transaction, as :meth:`append` does."""
        if not self.state.is_up:
            raise self.state.refuse()
        self._pending.append(entry)
        if self._write_task is None:
            self._write_task = asyncio.ensure_future(self._write())

    def written(self):
        """A future of what Redis made of the entry queued last (:func:`broker.cluster.room_in_redis.written`),
        done once it is in the stream, or failing with :class:`broker.core.seams.RelayUnavailable`."""
        future = asyncio.get_running_loop().create_future()
        self._waiting_ids.append((len(self._pending) - 1, future))
        return future

    def stats(self):
        stats = self.state.stats()
        stats["min_replicas"] = self.appends.min_replicas
        stats["memory_trims"] = self.appends.memory_trims
        stats["memory_forgotten_keys"] = self.appends.memory_forgotten_keys
        return stats

    FIGURES = (Figure("", lambda backplane: backplane.stats(), Metric("backplane", KEYED_GAUGES, "The backplane's")),)

    async def _write(self):
        # A task's first step runs in the next loop iteration: by then the whole
        # iteration's messages are pending, and go in one write.
        try:
            while self._pending:
                batch, waiting = self._pending, self._waiting_ids
                self._pending, self._waiting_ids = [], []
                try:
                    ids = await self.appends.write(batch)
                except FAILURES as error:
                    self._note_refusal(error)
                    LOG.warning("%d messages not published: %s", len(batch), error)
                    refused = self.state.refuse(len(batch), _redis_failure(error))
                    for _, future in waiting:
                        future.set_exception(refused)
                    continue
                self._writes_taken()
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

    def _writes_taken(self):
        """Redis took a write: it refuses none now. After a refusal, the round trip's age counts
        from now (what Redis refused did not come back; that was no stall)."""
        if (self.state.memory or self.state.refusal) and self.liveness is not None:
            self.liveness.wait_from(time.monotonic())
        self.state.memory = self.state.refusal = None

    def _note_refusal(self, error):
        """Redis answered a write with ``error``: one refusing it (for memory, or another
        reason: MISCONF, READONLY, NOPERM) makes the broker unavailable until a write is
        taken; one that is no answer of Redis's is the state's (:meth:`_went_down`)."""
        if isinstance(error, OutOfMemoryError):
            if self.state.memory is None:
                LOG.warning("Redis refuses writes for memory: %s", error)
            self.state.memory = "Redis refuses writes for memory: %s" % error
        elif isinstance(error, ResponseError):
            if self.state.refusal is None:
                LOG.warning("Redis refuses writes: %s", error)
            self.state.refusal = "Redis refuses writes: %s" % error

    def tell_write(self, error=None):
        """A named room's write (:mod:`broker.cluster.room_writes`) was taken, or refused with
        ``error``: Redis refuses writes, or takes them again, for every room (``/healthz``)."""
        if error is None:
            self._writes_taken()
        else:
            self._note_refusal(error)

    async def _answer(self, call):
        return await self._replies.answer(call)

    async def _epoch(self):
        """The room's epoch, set here if no broker has set it (see the module's rules)."""
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(self.epoch_key, secrets.token_urlsafe(6), nx=True)
        pipe.get(self.epoch_key)
        return (await self._answer(pipe.execute()))[1].decode()

    async def _load_tail(self, action=LifecycleAction.LOAD_TAIL):
        """Load the stream's tail into the hub as ``action`` asks (after a trim, its clients are told
        ``expired``; after a failover, in a new epoch; see the module's rules): returns the next."""
        if action is LifecycleAction.NEW_EPOCH:
            await self._answer(self._new_epoch(keys=[self.epoch_key], args=[self._hub.epoch,
                                                                             secrets.token_urlsafe(6)]))
        epoch = await self._epoch()
        tail = await tails.read(self._replies, self.key, self.counters_key, self.history)
        changed = epoch != self._hub.epoch
        self._hub.load(epoch, tail.start, tail.offsets, tail.encoded, tail.keys, tail.latest)
        if action is LifecycleAction.LOAD_TAIL_TELL_EXPIRED and not changed:
            self._hub.tell_gap(positions.EXPIRED)
        self._came_up()
        self.state.read(tail.last_id, tail.added)
        return self._lifecycle.handle(LifecycleEvent.TAIL_LOADED)

    async def _resume(self):
        """Redis answers again: read on after the last id delivered, unless its epoch changed
        (its data was lost), and then from its stream's tail: returns the lifecycle's next action."""
        if await self._epoch() != self._hub.epoch:
            LOG.warning("the room's epoch changed in Redis (it lost its data): its history starts again")
            return self._lifecycle.handle(LifecycleEvent.EPOCH_CHANGED)
        self._hub.confirm_epoch()
        self._came_up()
        return self._lifecycle.handle(LifecycleEvent.SAME_EPOCH)

    async def _read_forever(self):
        """Read until stopped. A failure of the loop's own, not Redis's, is logged and
        counted (``read_restarts``), and reading starts again after the last id delivered;
        one that lasts stops the broker's own writes coming back: it is ``stalled``
        (:mod:`broker.core.liveness`), its clients better elsewhere."""
        while not self._stopping.is_set():
            try:
                await self._read_until_stopped()
            except Exception:
                LOG.exception("the backplane's read loop failed; it reads again after %s", self.state.last_id)
                self.state.read_restarts += 1
                await self._pause()

    async def _read_until_stopped(self):
        """Ask the lifecycle what to do, do it; each step tells it how it ended, until it says stop."""
        action = self._lifecycle.handle(LifecycleEvent.READY)
        while action is not LifecycleAction.STOP:
            try:
                if self._stopping.is_set():
                    action = self._lifecycle.handle(LifecycleEvent.STOPPED)
                elif action is LifecycleAction.READ:
                    action = await self._read()
                elif action is LifecycleAction.RESUME:
                    action = await self._resume()
                elif action is LifecycleAction.PAUSE:
                    await self._pause()
                    action = self._lifecycle.handle(LifecycleEvent.READY)
                else:  # LOAD_TAIL, LOAD_TAIL_TELL_EXPIRED, NEW_EPOCH
                    action = await self._load_tail(action)
            except FAILURES as error:
                action = self._went_down(error)

    async def _pause(self):
        """Wait before the next attempt (the reconnect backoff), or until stopped."""
        try:
            await asyncio.wait_for(self._stopping.wait(), self._reconnect_backoff.next())
        except asyncio.TimeoutError:
            pass

    async def _report_forever(self):
        while not self._stopping.is_set():
            try:
                self.room_audience, self.room_brokers, epoch = await self.report.send(len(self._hub))
                self._writes_taken()
                if epoch is not None and epoch != self._hub.epoch:
                    self._lifecycle.handle(LifecycleEvent.EPOCH_SEEN)
            except FAILURES as error:
                self._note_refusal(error)
                self.room_audience = self.room_brokers = None
                if isinstance(error, OutOfMemoryError):  # keys kept for a window must not keep it unhealthy
                    try:
                        await self.appends.give_memory(self._replies, stream=False)
                    except FAILURES:
                        pass
            except Exception:
                # As for any event-loop callback: log it, and the reporting goes on.
                LOG.exception("reporting the audience to %s failed", self.report.key)
                self.room_audience = self.room_brokers = None
            try:
                await asyncio.wait_for(self._stopping.wait(), AUDIENCE_REPORT_S)
            except asyncio.TimeoutError:
                pass

    async def _read(self):
        """Deliver the entries after ``last_id``, or none when the stream lost ``last_id`` and what
        follows it must wait for a reload (see the module's rules): returns the next action."""
        last_id = self.state.last_id
        pipe = self._redis.pipeline(transaction=False)
        pipe.xrange(self.key, last_id, last_id, count=1)
        asking = self.liveness is not None and self.report.ask(pipe, time.monotonic())
        pipe.xread({self.key: last_id}, count=READ_COUNT, block=BLOCK_MS)
        held, *report, reply = await self._answer(pipe.execute())
        if asking and self.report.came_back(report[0]):
            self.liveness.came_back(time.monotonic())
        entries = reply[0][1] if reply else []
        if entries and not held:
            info = await self._answer(self._redis.xinfo_stream(self.key))
            loss = self.state.missing(id_text(info["first-entry"][0]), info["entries-added"], info["length"])
            if loss is not None:
                LOG.warning("stream %s no longer holds %s, the last entry this broker delivered (%s): its clients "
                            "are told a gap", self.key, last_id, "it fell more than %d behind" % self.maxlen
                            if loss is LifecycleEvent.TRIMMED else "the primary lost it")
                return self._lifecycle.handle(loss)
        if entries:
            self._deliver(entries)
        return self._lifecycle.handle(LifecycleEvent.DELIVERED)

    def _deliver(self, entries):
        age = self.state.read_through(entries[0][0].decode(), entries[-1][0].decode(), len(entries))
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
            if self.liveness is not None:  # its first report since is on its way
                self.liveness.wait_from(time.monotonic())

    def _went_down(self, error):
        if self._stopping.is_set():
            return self._lifecycle.handle(LifecycleEvent.STOPPED)
        self._hub.doubt_epoch()
        reason = _redis_failure(error)
        if self.state.went_down(reason):
            LOG.warning("backplane down (%s); clients stay connected, publishing is refused", reason)
        return self._lifecycle.handle(LifecycleEvent.FAILED)
