"""The named rooms a broker has viewers of, fed from Redis: one pub/sub connection for them all.

Rules this module keeps (the scripts that publish are :mod:`broker.cluster.named_rooms`', what
to do with each message :mod:`broker.cluster.room_sequences`'; the default room is the
backplane's, :mod:`broker.cluster.backplane`, untouched):

* A broker reads nothing of a room it has no viewer of. The registry of rooms tells
  (:class:`RoomListener`) when a room gains its first local viewer: the room's channel is
  subscribed to (SUBSCRIBE on the one pub/sub connection), then its tail loaded into its hub
  (:mod:`broker.cluster.tails`), and the channel's messages after that tail are delivered. A
  room without an epoch in Redis takes its hub's; a room that has one gives it to the hub. Until
  the load, the hub's opens wait as its resumes do (:meth:`broker.core.hub.Hub.doubt_epoch`), so
  that a viewer opens in the room's epoch, with its tail.
  When the registry forgets the room, its channel is unsubscribed from.
* The pub/sub connection is one: a room's SUBSCRIBE waits while the connection is being made
  (and subscribed to every room fed), so that no second connection is opened beside it.
* Everything that touches a room's hub happens in one task, in the order it was asked: a
  subscription and its load, the channel's messages (read by a second task, which only reads),
  a recovery. So a room's messages reach its hub in the stream's order, each at most once.
  The messages read in one go are one batch a room (:meth:`broker.core.hub.Hub.deliver`), as
  one XREAD is in the default room.
* A message the room's sequence cannot deliver (entries before it did not come) is recovered
  from the stream: every entry after the last id delivered; when the stream lost that id, the
  tail is loaded again and the clients told a gap: ``expired`` for a trim; a new epoch for a
  failover (:data:`broker.cluster.room_in_redis.NEW_EPOCH`), or for a room whose keys expired
  (its epoch gone with them) or that Redis lost.
* The pub/sub connection answers within :data:`broker.cluster.replies.REPLY_TIMEOUT_S` (a PING
  when it is silent for :data:`broker.cluster.replies.BLOCK_MS`), or it has failed. Whenever it
  is connected again (and first), every room subscribed to is read from its stream after its
  last id delivered, and its epoch compared, once the subscriptions are back: nothing published
  while it was away goes unsaid. Meanwhile, each room's epoch is in doubt (resumes wait).
* A failure of Redis in a load or a recovery leaves the room to be caught up again, with the
  backplane's backoff; a failure of the feeds' own is logged, and the feeds go on.
"""

import asyncio
import logging
import secrets
import time
from typing import Protocol

from redis.exceptions import TimeoutError as NoAnswer

from broker.cluster import named_rooms, room_in_redis, tails
from broker.cluster.replies import BLOCK_MS, FAILURES, REPLY_TIMEOUT_S, Replies
from broker.cluster.room_in_redis import FIELD
from broker.cluster.room_sequences import ChannelStep, RoomSequence, StreamRead
from broker.cluster.state import Backoff, stream_id
from broker.protocol import positions

LOG = logging.getLogger("broker.cluster.room_feeds")

READ_COUNT = 1000
# Rooms read back in one pipeline after the pub/sub connection came back.
CATCH_UP_ROOMS = 500


class RoomListener(Protocol):
    """What the registry of rooms (:mod:`broker.core.rooms`) tells; :class:`RoomFeeds` is one."""

    def room_joined(self, name: str, hub) -> None:
        """Room ``name`` (its :class:`broker.core.hub.Hub`, ``hub``) gained its first local viewer."""

    def room_forgotten(self, name: str) -> None:
        """Room ``name`` is forgotten: nothing of it is delivered from now on."""


class _Room:
    """A room fed here: its ``hub``, its Redis keys, its sequence; ``loaded`` once its tail was."""

    __slots__ = ("hub", "keys", "sequence", "loaded", "subscribed")

    def __init__(self, hub, keys):
        self.hub = hub
        self.keys = keys
        self.sequence = RoomSequence()
        self.loaded = False
        self.subscribed = True


class RoomFeeds:
    """The named rooms at ``prefix`` this broker has viewers of, fed through ``redis`` (a
    ``redis.asyncio.Redis`` whose pool gives the pub/sub connection too), each hub keeping
    ``history`` messages; an epoch set here expires after ``expiry_ms``, as a publish's keys."""

    def __init__(self, redis, prefix, history, expiry_ms):
        self._redis = redis
        self._replies = Replies(redis)
        self.prefix = prefix
        self.history = history
        self.expiry_ms = expiry_ms
        self._new_epoch = redis.register_script(room_in_redis.NEW_EPOCH)
        self._rooms = {}
        self._channels = {}
        # Subscribed to always, so that the connection has a subscription to PING in.
        self._own_channel = named_rooms.room_key(prefix, "")
        self._events = asyncio.Queue()
        self._pubsub = None
        self._subscribing = None
        self._reconnect_backoff = Backoff()
        self._behind = set()
        self._later = None
        self._tasks = ()
        self._stopping = None
        self.reconnects = 0
        self.recoveries = 0
        self.gaps = {positions.EXPIRED: 0, positions.EPOCH: 0}

    def start(self):
        """Read and deliver from now on."""
        self._stopping = asyncio.Event()
        self._subscribing = asyncio.Lock()
        self._tasks = (asyncio.ensure_future(self._read_forever()), asyncio.ensure_future(self._work_forever()))

    async def stop(self):
        """Stop reading and delivering, close the connections."""
        self._stopping.set()
        self._events.put_nowait(None)
        if self._later is not None:
            self._later.cancel()
        if self._pubsub is not None:
            await self._pubsub.aclose()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self._redis.aclose()

    def __len__(self):
        return len(self._rooms)

    def hubs(self):
        """``{name: hub}`` of every room fed."""
        return {name: room.hub for name, room in self._rooms.items()}

    def room_joined(self, name, hub):
        """Feed room ``name`` into ``hub`` (see the module's rules); again for a room fed, nothing."""
        if name in self._rooms:
            return
        room = _Room(hub, named_rooms.RoomKeys.of(self.prefix, name))
        self._rooms[name] = room
        self._channels[room.keys.channel.encode()] = room
        hub.doubt_epoch(opens=True)
        self._events.put_nowait((self._subscribe, room, None))

    def room_forgotten(self, name):
        """Feed room ``name`` no more."""
        room = self._rooms.pop(name, None)
        if room is None:
            return
        del self._channels[room.keys.channel.encode()]
        room.subscribed = False
        self._behind.discard(room)
        self._events.put_nowait((self._unsubscribe, room, None))

    async def _read_forever(self):
        """Keep the pub/sub connection, and hand what it reads to the task that delivers."""
        while not self._stopping.is_set():
            pubsub = self._redis.pubsub()
            try:
                async with self._subscribing:  # one connection: the worker's SUBSCRIBE waits for it
                    await self._replies.answer(pubsub.subscribe(self._own_channel, *[
                        room.keys.channel for room in self._rooms.values()]))
                    self._pubsub = pubsub
                self._reconnect_backoff.reset()
                self._events.put_nowait((self._catch_up, None, None))
                await self._listen(pubsub)
            except FAILURES as error:
                if not self._stopping.is_set():
                    LOG.warning("the rooms' pub/sub connection failed (Redis: %s): each room is read again "
                                "from its stream once it is back", error or type(error).__name__)
            except Exception:
                if not self._stopping.is_set():
                    LOG.exception("the rooms' pub/sub reader failed: it connects again")
            finally:
                self._pubsub = None
                try:
                    await pubsub.aclose()
                except FAILURES:
                    pass
            if self._stopping.is_set():
                return
            self.reconnects += 1
            for room in self._rooms.values():
                room.hub.doubt_epoch(opens=not room.loaded)
            await self._pause()

    async def _listen(self, pubsub):
        loop = asyncio.get_running_loop()
        heard = loop.time()
        channels, events = self._channels, self._events
        while not self._stopping.is_set():
            message = await pubsub.get_message(timeout=BLOCK_MS / 1000)
            now = loop.time()
            if message is None:
                if now - heard > REPLY_TIMEOUT_S:
                    raise NoAnswer("no answer within %g s" % REPLY_TIMEOUT_S)
                await pubsub.ping()
                continue
            heard = now
            if message["type"] == "message":
                room = channels.get(message["channel"])
                if room is not None:
                    events.put_nowait((None, room, named_rooms.published(message["data"])))

    async def _pause(self):
        try:
            await asyncio.wait_for(self._stopping.wait(), self._reconnect_backoff.next())
        except asyncio.TimeoutError:
            pass

    async def _work_forever(self):
        """Do what was asked, in order (see the module's rules), until stopped."""
        events = self._events
        while True:
            event = await events.get()
            taken = [event]
            while not events.empty():
                taken.append(events.get_nowait())
            if None in taken:
                return
            try:
                await self._handle(taken)
            except Exception:
                # As for any event-loop callback: log it, and the feeds go on.
                LOG.exception("the rooms' feeds failed on %d events", len(taken))

    async def _handle(self, taken):
        """Each event of ``taken``: an action on a room, or a message of its channel to judge;
        the messages delivered are one batch a room, sent before the next action."""
        batches = {}
        for action, room, message in taken:
            if action is not None:
                self._deliver_all(batches)
                await self._attempt(action, room)
                continue
            if not room.subscribed or not room.loaded:
                continue  # its load or recovery reads it from the stream
            step = room.sequence.judge(message.prev, message.new)
            if step is ChannelStep.DELIVER:
                batch = batches.get(room)
                if batch is None:
                    batch = batches[room] = ([], [], [])
                batch[0].append(message.encoded)
                batch[1].append(message.new)
                batch[2].append(message.key)
                room.sequence.delivered(message.new)
            elif step is ChannelStep.RECOVER:
                self._deliver_all(batches)
                self.recoveries += 1
                await self._attempt(self._catch_up, [room])
        self._deliver_all(batches)

    async def _attempt(self, action, rooms):
        """``action(rooms)`` (a room, a list of rooms, or None: every room fed); when Redis fails
        it, the rooms it was for are caught up later, all in one catch-up."""
        try:
            await action(rooms)
        except FAILURES as error:
            if action is self._unsubscribe:
                return  # a pub/sub connection that failed has no subscriptions left
            LOG.warning("reading the rooms failed (Redis: %s): they are read again", error or type(error).__name__)
            self._behind.update(self._rooms.values() if rooms is None else rooms if type(rooms) is list else [rooms])
            if self._later is None:
                self._later = asyncio.get_running_loop().call_later(self._reconnect_backoff.next(),
                                                                    self._caught_up_later)

    def _caught_up_later(self):
        self._later = None
        self._events.put_nowait((self._catch_up, list(self._behind), None))
        self._behind.clear()

    async def _subscribe(self, room):
        if not room.subscribed:
            return
        async with self._subscribing:
            pubsub = self._pubsub
            if pubsub is not None:  # else the next connection subscribes to it
                try:
                    await self._replies.answer(pubsub.subscribe(room.keys.channel))
                except FAILURES:
                    pass  # the reader connects again, then catches every room up
        if not room.loaded:  # else a catch-up loaded it first
            await self._load(room)

    async def _unsubscribe(self, room):
        async with self._subscribing:
            pubsub = self._pubsub
            if pubsub is not None and room.keys.channel.encode() not in self._channels:
                await self._replies.answer(pubsub.unsubscribe(room.keys.channel))

    async def _load(self, room, tell=None):
        """Load ``room``'s tail into its hub (its clients told ``tell``, a gap's reason, unless
        the epoch changed, which tells them a gap of its own)."""
        # A room new to Redis takes the epoch its hub has, told already to any viewer that opened.
        epoch = room.hub.epoch if not room.loaded else secrets.token_urlsafe(6)
        pipe = self._redis.pipeline(transaction=True)
        pipe.set(room.keys.epoch, epoch, nx=True, px=self.expiry_ms)
        pipe.get(room.keys.epoch)
        _, epoch = await self._replies.answer(pipe.execute())
        tail = await tails.read(self._replies, room.keys.stream, room.keys.counters, self.history)
        if not room.subscribed:
            return
        hub = room.hub
        changed = epoch.decode() != hub.epoch
        if changed and room.loaded:
            self.gaps[positions.EPOCH] += 1
        hub.load(epoch.decode(), tail.start, tail.offsets, tail.encoded, tail.keys, tail.latest)
        if tell is not None and not changed:
            self.gaps[tell] += 1
            hub.tell_gap(tell)
        room.sequence.delivered(tail.last_id)
        room.loaded = True

    async def _catch_up(self, rooms):
        """Read ``rooms`` (None: every room fed) from their streams after their last ids delivered,
        in pipelines of :data:`CATCH_UP_ROOMS`."""
        rooms = [room for room in (self._rooms.values() if rooms is None else rooms) if room.subscribed]
        for room in [room for room in rooms if not room.loaded]:
            await self._load(room)
        rooms = [room for room in rooms if room.loaded]
        while rooms:
            chunk, rooms = rooms[:CATCH_UP_ROOMS], rooms[CATCH_UP_ROOMS:]
            pipe = self._redis.pipeline(transaction=True)  # what a room's read finds is of one moment
            for room in chunk:
                last = room.sequence.last
                pipe.get(room.keys.epoch)
                pipe.xrevrange(room.keys.stream, max=last, min="-", count=1)
                pipe.xrange(room.keys.stream, min="(" + last, max="+", count=READ_COUNT)
                pipe.xinfo_stream(room.keys.stream)
            replies = await self._replies.answer(pipe.execute(raise_on_error=False))
            for i, room in enumerate(chunk):
                epoch, at_or_before, entries, info = replies[4 * i:4 * i + 4]
                if await self._read_after(room, epoch, at_or_before, entries, tails.whole(info)):
                    rooms.append(room)  # more to read

    async def _read_after(self, room, epoch, at_or_before, entries, whole):
        """Deliver to ``room`` what its stream holds after its last id, ``entries``, as the room's
        ``epoch``, the newest entry at or before that id and whether the stream is ``whole`` say:
        True when there may be more."""
        for reply in (epoch, at_or_before, entries):
            if isinstance(reply, Exception):
                raise reply
        if not room.subscribed:
            return False
        hub = room.hub
        if epoch is None or epoch.decode() != hub.epoch:
            await self._load(room)  # its keys expired, or Redis lost them: another epoch, told
            return False
        read = room.sequence.judge_read(at_or_before[0][0].decode() if at_or_before else None, whole)
        if read is StreamRead.FAILOVER:
            LOG.warning("room %s's stream never held %s, the last entry this broker delivered: a new epoch",
                        room.keys.channel, room.sequence.last)
            await self._replies.answer(self._new_epoch(keys=[room.keys.epoch], args=[hub.epoch,
                                                                                    secrets.token_urlsafe(6)]))
            await self._load(room)
            return False
        if read is StreamRead.TRIMMED:
            await self._load(room, positions.EXPIRED)
            return False
        hub.confirm_epoch()
        if entries:
            offsets = [entry_id.decode() for entry_id, _ in entries]
            room.sequence.delivered(offsets[-1])
            self._deliver(room, [fields[FIELD].decode() for _, fields in entries], offsets,
                          room_in_redis.keys_of(entries))
        return len(entries) == READ_COUNT

    def _deliver_all(self, batches):
        for room, (encoded, offsets, keys) in batches.items():
            self._deliver(room, encoded, offsets, None if not any(keys) else keys)
        batches.clear()

    def _deliver(self, room, encoded, offsets, keys):
        age = max(0, time.time() * 1000 - stream_id(offsets[0])[0]) / 1000
        try:
            room.hub.deliver(encoded, offsets, age, keys)
        except Exception:
            # As for any event-loop callback: log it, and the feeds go on.
            LOG.exception("delivering %d messages of %s failed", len(encoded), room.keys.channel)
