"""Publishes in named rooms, written to Redis in one step an event-loop iteration, then replicated.

Rules this module keeps (the scripts are :mod:`broker.cluster.named_rooms`'; the default
room's writes are :mod:`broker.cluster.appends`', untouched):

* Every publish in a named room is one script (a message's, with or without an idempotency
  key, or a counter's), sent by its SHA1 alone (:func:`broker.cluster.appends.by_sha`). What is
  queued in one event-loop iteration, whatever its rooms, goes as one MULTI/EXEC transaction
  (one script alone needs none), then one WAIT for ``--redis-min-replicas``: a publish is
  answered once the replicas hold it; fewer replicas in time fail the whole batch
  (:class:`broker.cluster.appends.TooFewReplicas`), as in the default room.
* At most one write is in flight, on a connection of its own (not the default room's), so a
  room's publishes from this broker reach its stream in the order they were made.
* A client's message (:meth:`RoomWrites.relay`) is written as a ``POST /publish``'s; nobody
  waits for its answer: one refused is counted (``refused``).
* A Redis refusing the scripts for memory is given memory back by the broker's
  :class:`broker.cluster.appends.MemoryGiver` (the default room's), as the default room's
  writes are: the rooms written give their idempotency records first, then the rooms the
  broker gave one, then their own streams; the scripts refused are written again, in order.
  So the rooms of a broker are counted together (``memory_forgotten_keys``, ``memory_trims``
  in ``/stats``), and a room's stream is cut only by its own writes: a client resuming before
  the cut, at a broker that loads the room's tail then, is told a gap (``expired``).
* The backplane is told of each write taken or refused
  (:meth:`broker.cluster.backplane.Backplane.tell_write`): whether Redis refuses writes for
  memory (``/healthz``) is one answer for every room.
* A write that fails fails every publish waiting on it with
  :class:`broker.core.seams.RelayUnavailable`; whether Redis applied it cannot be known (a
  retry with its idempotency key appends nothing twice). Each script has its own reply: one
  refused fails its publish only.
"""

import asyncio
import secrets

from broker.cluster import appends, named_rooms
from broker.cluster.appends import Append, Script
from broker.cluster.replies import FAILURES
from broker.core.seams import RelayUnavailable


def _refused(error):
    if appends.for_memory(error):  # redis-py 6.4 loses Redis's text of one refused in a transaction
        return RelayUnavailable("the cluster backplane could not publish: Redis refuses writes for memory (maxmemory)")
    return RelayUnavailable("the cluster backplane could not publish: Redis: %s" % (error or type(error).__name__))


# The scripts of named_rooms, as they are sent.
SCRIPTS = PUBLISH, PUBLISH_ONCE, COUNT = tuple(map(Script.of, (named_rooms.PUBLISH, named_rooms.PUBLISH_ONCE,
                                                               named_rooms.COUNT)))


def queue_script(pipe, keys, entry, maxlen, room):
    """Queue on ``pipe`` the script of ``entry`` in the room of ``keys``, its stream of about
    ``maxlen`` entries, ``room`` its ARGV after its own (the channel, the expiry, an epoch)."""
    if type(entry) is not Append:
        COUNT.queue(pipe, keys.of_count(), entry.arguments(maxlen) + room)
    elif entry.once is None:
        PUBLISH.queue(pipe, keys.of_publish(), [entry.encoded, maxlen, entry.key or ""] + room)
    else:
        PUBLISH_ONCE.queue(pipe, keys.of_publish_once(), entry.arguments(maxlen) + room)


def _rooms_of(batch):
    """The keys of the rooms ``batch`` writes in, each once, in its order."""
    return list(dict.fromkeys(keys for keys, *_ in batch))


class RoomWrites:
    """Publishes in the named rooms at ``prefix`` through ``replies`` (a
    :class:`broker.cluster.replies.Replies` of one connection): streams trimmed to about
    ``maxlen`` entries, a room's keys expiring ``expiry_ms`` after its last publish, each
    write made as the default room's ``backplane`` (a :class:`broker.cluster.backplane.Backplane`)
    makes its own: acknowledged by as many replicas, memory given back by its giver, and it told
    (see the module's rules)."""

    def __init__(self, replies, prefix, maxlen, expiry_ms, backplane):
        self.replies = replies
        self.prefix = prefix
        self.maxlen = maxlen
        self.min_replicas = backplane.appends.min_replicas
        self.expiry_ms = expiry_ms
        self.memory = backplane.appends.memory
        self.backplane = backplane
        self._pending = []
        self._task = None
        self.refused = 0

    def queue(self, name, entry, epoch):
        """Queue ``entry`` (an :class:`broker.cluster.appends.Append` or
        :class:`broker.cluster.appends.Count`) in room ``name``, giving it ``epoch`` if it has
        none: a future of :func:`broker.cluster.named_rooms.answered`'s ``(written, epoch)``."""
        future = asyncio.get_running_loop().create_future()
        keys = named_rooms.RoomKeys.of(self.prefix, name)
        if entry.once is not None:
            self.memory.recording(keys, entry.once.window_s)
        self._pending.append((keys, entry, epoch, future))
        if self._task is None:
            self._task = asyncio.ensure_future(self._write())
        return future

    def relay(self, name):
        """The :class:`broker.core.seams.Relay` of room ``name``'s hub: each message a client of
        the room publishes goes through the room's script, as a ``POST /publish`` does; what
        fails is counted in :attr:`refused` (a client is not answered)."""
        def relay(encoded, key=None):
            self.queue(name, Append(encoded, key), secrets.token_urlsafe(6)).add_done_callback(self._taken)
        return relay

    def _taken(self, future):
        if future.exception() is not None:
            self.refused += 1

    async def close(self):
        """Let the write in flight finish, and close the connection."""
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)
        await self.replies.redis.aclose()

    async def _write(self):
        # A task's first step runs in the next loop iteration: the whole iteration's publishes go in one write.
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    replies = await self.memory.write(self.replies, batch, self._transaction, _rooms_of)
                    await appends.replicated(self.replies, self.min_replicas)
                except Exception as error:  # Redis's failure, or one of ours: no publish waits forever
                    if isinstance(error, FAILURES):
                        self.backplane.tell_write(error)
                    for *_, future in batch:
                        future.set_exception(_refused(error) if isinstance(error, FAILURES) else error)
                    continue
                self.backplane.tell_write(next(filter(appends.for_memory, replies), None))
                for (*_, future), reply in zip(batch, replies):
                    if isinstance(reply, Exception):
                        future.set_exception(_refused(reply))
                    else:
                        future.set_result(named_rooms.answered(reply))
        finally:
            self._task = None

    async def _transaction(self, batch):
        return await appends.by_sha(self.replies, SCRIPTS, self._sent, batch)

    async def _sent(self, batch):
        pipe = self.replies.redis.pipeline(transaction=len(batch) > 1)  # a script alone is one step already
        for keys, entry, epoch, _ in batch:
            queue_script(pipe, keys, entry, self.maxlen, [keys.channel, self.expiry_ms, epoch])
        return await pipe.execute(raise_on_error=False)
