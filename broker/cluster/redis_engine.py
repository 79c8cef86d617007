"""The Engine of brokers sharing a room through Redis: the room's order is its stream's.

Rules this module keeps (the seam is :mod:`broker.core.engines`; the writes are the
backplane's, :mod:`broker.cluster.backplane` and :mod:`broker.cluster.appends`):

* A request is queued for the backplane's next transaction, and answered once
  Redis took it: a message's offset is its stream id. Nothing is sent to the
  room from here: every broker sends what its read loop gives back.
* A message with an idempotency key, and every counter's change, is one
  script in that transaction (:mod:`broker.cluster.room_in_redis`), which
  keeps the key's record beside the stream: a retry finds it on any broker.
  A record is what :meth:`broker.core.idempotency.Answer.record` writes,
  followed by the id, and for a counter the total; a counter's script
  answers ``"id total"``. Both are read here, nowhere else.
* The default room (a hub whose ``name`` is ``""``) writes through the backplane's queue,
  as it always has: a message without an idempotency key goes the way a client's does,
  through the room's relay (:meth:`broker.core.hub.Hub.publish`, which counts it in).
* A named room's hub (``name``, from the registry, :mod:`broker.core.rooms`) writes each
  publish as its room's script (:mod:`broker.cluster.room_writes`), which answers the
  room's epoch from Redis with the position: a new one if the room had none there.
* A message with a key, or a counter's change, counts among the room's messages in
  (:meth:`broker.core.hub.Hub.appended`) once Redis appended it (a retry appends nothing).
"""

import secrets

from broker.cluster.appends import Append, Count, OnceRecord
from broker.core import counters
from broker.core.engines import PublishResult, first_answer
from broker.core.idempotency import Answer


class RedisEngine:
    """The :class:`broker.core.engines.Engine` of a cluster: writes through ``backplane``
    (a :class:`broker.cluster.backplane.Backplane`), and in the named rooms through ``rooms``
    (a :class:`broker.cluster.room_writes.RoomWrites`, None: the default room only), its
    idempotency keys kept in Redis for ``window``'s seconds and counted in ``window`` (a
    :class:`broker.core.idempotency.Window`)."""

    def __init__(self, backplane, window, rooms=None):
        self.backplane = backplane
        self.window = window
        self.rooms = rooms

    async def publish(self, room, request):
        """Publish ``request`` in ``room`` (see :mod:`broker.core.engines`)."""
        once = request.once
        first = first_answer(room, request)
        once_record = None if once is None else OnceRecord(once.key, first.record(), self.window.seconds)
        counter = request.counter
        if self.rooms is not None and room.name:
            return await self._publish_named(room, request, first, once_record)
        if counter is not None:
            self.backplane.queue(Count(counter.name, counter.operation, counter.amount, once_record, room.counters.most))
            return self._counted(room, first, await self.backplane.written())
        if once is None:  # the room relays it through the backplane, as a client's message
            room.publish(request.message, request.conflating)
            return PublishResult(first.recipients, room.epoch, await self.backplane.written())
        encoded, _ = room.encode(request.message)
        self.backplane.queue(Append(encoded, request.conflating, once_record))
        appended, text = await self.backplane.written()
        if not appended:
            return self._again(text, once.fingerprint)
        room.appended()
        return PublishResult.of(first._replace(offset=text))

    async def _publish_named(self, room, request, first, record):
        """Publish ``request`` in the named ``room`` through its script (see the module's rules),
        ``first`` its answer but the position, ``record`` its :class:`OnceRecord` or None."""
        counter = request.counter
        if counter is not None:
            entry = Count(counter.name, counter.operation, counter.amount, record, room.counters.most)
        else:
            encoded, _ = room.encode(request.message)
            entry = Append(encoded, request.conflating, record)
        # A new epoch if the room has none in Redis, never the hub's: the room's keys may have
        # expired while this broker held it, and its old epoch would pass a resume of before them.
        written, epoch = await self.rooms.queue(room.name, entry, secrets.token_urlsafe(6))
        first = first._replace(epoch=epoch)
        if counter is not None:
            return self._counted(room, first, written)
        appended, text = written
        if not appended:
            return self._again(text, request.once.fingerprint)
        room.appended()
        return PublishResult.of(first._replace(offset=text))

    def _counted(self, room, first, written):
        """The result of a counter's change Redis answered with ``written``, ``first`` its answer but the position."""
        outcome, text = written
        if outcome == counters.REFUSED:
            raise ValueError(text)
        if outcome == counters.SEEN:
            return self._again(text, first.fingerprint)
        if outcome == counters.APPENDED:
            room.appended()
        offset, value = text.split(" ")
        return PublishResult.of(first._replace(offset=offset, value=value))

    def _again(self, text, fingerprint):
        """The answer Redis kept, ``text``, to a retry of ``fingerprint`` (see
        :meth:`broker.core.idempotency.Window.again`)."""
        return PublishResult.of(self.window.again(Answer.parse(text), fingerprint), replayed=True)
