"""How a subscriber with positions starts (open, resumed, or a gap), and those waiting to.

Rules this module keeps (the room, :mod:`broker.core.hub`, joins and writes;
this module judges, builds each start's first batch, and keeps who waits):

* The epoch names the room's history (:class:`Resumes`): a new one for a
  room alone, the cluster's from its relay. A start is an outcome of
  :data:`broker.protocol.positions.OUTCOMES`, counted: ``open`` without a
  position; ``resumed`` when the history holds every message after the one
  given; else a ``gap`` by its reason (``epoch``, ``expired``, ``unknown``).
* An offset past the newest is ``unknown`` for a room alone. In a cluster
  the broker may be behind: the subscriber waits until a delivery reaches
  it or :data:`AHEAD_WAIT_S` pass, unless no broker can have given it yet (a
  stream id's number is the millisecond Redis added it: one more than
  AHEAD_WAIT_S past this broker's wall clock is ``unknown`` at once). While
  the cluster's epoch is in doubt every resume waits; while a room's history was
  never loaded (``opens_wait``), every open too, with or without positions, so
  that it starts in the cluster's epoch with its tail (an open that waited
  AHEAD_WAIT_S starts as it is).
* A first batch carries at most ``first_batch_bytes`` (a client's
  ``--max-buffer``): its lead and its messages, each counted as a client
  with positions is sent it, in its envelope
  (:func:`broker.protocol.positions.sent_size`),
  however long the history and the replay: the
  counters' latest messages (:mod:`broker.core.counters`), which every first
  batch carries, and the newest messages that fit beside them. A resume whose messages do not all fit is a gap
  (``expired``: more than the client could be sent at once), followed by
  those that fit. A first batch is read from the history's newest end, one
  message at a time, until the next would not fit (:meth:`Resumes.first_batch`):
  so a client that opens or resumes costs the broker at most its buffer's
  bound, whatever the history's length and the number of keys it holds.
* A waiting subscriber is one :class:`Waiting` record: what it resumes after,
  until when it waits, the writer it will be started with (which may change
  while it waits, :meth:`broker.core.hub.Hub.move`), itself.
* Waiting costs a delivery one test, however many wait: the records that
  wait for an offset are kept by it (a heap), and a delivery asks only
  whether the lowest is reached (:meth:`WaitingResumes.due`). Their
  deadlines, in the order they came, are looked at when the room samples,
  once a second (:meth:`WaitingResumes.expired`).
* A record leaves when its subscriber starts, or unsubscribes: the heap and
  the deadlines keep it until they reach it, and skip it then; the heap is
  rebuilt when records gone make up more than half of it, so that it stays
  bounded by twice those waiting.
* No clock, no I/O: times and offsets' keys come from the room.
"""

import collections
import heapq
import itertools
import secrets
import time
from typing import NamedTuple, Optional

from broker.protocol import positions
from broker.protocol.batch import Batch
from broker.protocol.positions import offset_key

# How long a subscriber resuming from an offset its broker has not delivered yet waits for it;
# in a cluster, also how far past this broker's clock a stream id may be and still be waited for.
AHEAD_WAIT_S = 5.0
# Records gone that the heap keeps before it is rebuilt, beyond as many as wait.
_SLACK = 16


class Keeping(NamedTuple):
    """What the room keeps and gives a new subscriber: ``replay`` messages replayed to one
    that opens, a ``history`` of at most that many messages and, if not 0,
    ``history_seconds`` old, and at most ``first_batch_bytes`` of messages in a subscriber's
    first batch (None: no bound; a running broker's is ``--max-buffer``)."""

    replay: int = 0
    history: int = 0
    history_seconds: float = 0.0
    first_batch_bytes: Optional[int] = None


class Waiting:
    """A subscriber waiting to resume after ``since`` (the ``(epoch, offset)`` texts it gave),
    until ``deadline``, to be started through ``writer``."""

    __slots__ = ("since", "deadline", "writer", "subscriber")

    def __init__(self, since, deadline, writer, subscriber):
        self.since = since
        self.deadline = deadline
        self.writer = writer
        self.subscriber = subscriber


class WaitingResumes:
    """The room's waiting subscribers (see the module's rules)."""

    def __init__(self):
        self._by_subscriber = {}
        self._ahead = []
        self._deadlines = collections.deque()
        self._arrivals = itertools.count()

    def __len__(self):
        return len(self._by_subscriber)

    def __iter__(self):
        return iter(list(self._by_subscriber))

    def get(self, subscriber):
        """The :class:`Waiting` record of ``subscriber``, or None."""
        return self._by_subscriber.get(subscriber)

    def add(self, record, key):
        """``record`` waits until its deadline, and for ``key`` (an offset's key) if not None."""
        self._by_subscriber[record.subscriber] = record
        self._deadlines.append(record)
        if key is not None:
            self._wait_for(key, record)

    def remove(self, subscriber):
        """``subscriber`` waits no more; whether it waited."""
        return self._by_subscriber.pop(subscriber, None) is not None

    def due(self, newest):
        """Whether a subscriber waits for an offset at or before ``newest`` (a key)."""
        return bool(self._ahead) and self._ahead[0][0] <= newest

    def reached(self, newest):
        """Each record waiting for an offset at or before ``newest``, with that offset's key,
        taken out as it comes (starting one may drop others)."""
        ahead = self._ahead
        while ahead and ahead[0][0] <= newest:
            key, _, record = heapq.heappop(ahead)
            if self._take(record):
                yield record, key

    def expired(self, now):
        """Each record whose deadline passed by ``now``, taken out as it comes."""
        deadlines = self._deadlines
        while deadlines and deadlines[0].deadline < now:
            record = deadlines.popleft()
            if self._take(record):
                yield record

    def every(self):
        """Each record waiting, to be judged again: the offsets they wait for are forgotten,
        and each is taken out only by :meth:`take`, or waits on by :meth:`wait_for`."""
        self._ahead = []
        for record in list(self._by_subscriber.values()):
            if self._by_subscriber.get(record.subscriber) is record:  # not dropped as another started
                yield record

    def take(self, record):
        """Take ``record`` out: its subscriber starts."""
        self._take(record)

    def wait_for(self, key, record):
        """``record``, still waiting, waits for ``key`` again (see :meth:`every`)."""
        self._wait_for(key, record)

    def _take(self, record):
        """Take ``record`` out if it still waits (not started, not gone); whether it did."""
        if self._by_subscriber.get(record.subscriber) is not record:
            return False
        del self._by_subscriber[record.subscriber]
        return True

    def _wait_for(self, key, record):
        ahead = self._ahead
        heapq.heappush(ahead, (key, next(self._arrivals), record))
        if len(ahead) > 2 * len(self._by_subscriber) + _SLACK:
            ahead[:] = [entry for entry in ahead if self._by_subscriber.get(entry[2].subscriber) is entry[2]]
            heapq.heapify(ahead)


class Resumes:
    """The starts of the subscribers in ``history`` (a :class:`broker.core.history.History`),
    as ``keeping`` (a :class:`Keeping`) says, ``in_cluster`` when a relay
    delivers, beside the room's ``counters`` (a :class:`broker.core.counters.Counters`):
    the ``epoch``, whether it is known (``epoch_known``) and whether opens wait for it
    (``opens_wait``), the ``starts`` by outcome, those ``waiting`` (see the module's rules)."""

    def __init__(self, history, keeping, in_cluster, counters, wall_clock=time.time):
        self.history = history
        self.counters = counters
        self.replay = keeping.replay
        self.first_batch_bytes = keeping.first_batch_bytes
        self.in_cluster = in_cluster
        self.wall_clock = wall_clock
        self.epoch = secrets.token_urlsafe(6)
        self.epoch_known = True
        self.opens_wait = False
        self.starts = collections.Counter()
        self.waiting = WaitingResumes()

    def judge(self, since):
        """How a subscriber asking to resume after ``since`` (``(epoch, offset)`` texts, or None)
        starts: an outcome, or None to wait; and the key of its offset."""
        if since is None:
            return None if self.opens_wait else positions.OPEN, None
        if not self.epoch_known:
            return None, None
        epoch, offset = since
        if epoch != self.epoch:
            return positions.EPOCH, None
        try:
            key = offset_key(offset)
        except ValueError:
            return positions.UNKNOWN, None
        return self.outcome(key), key

    def outcome(self, key):
        """A resume after ``key`` in this epoch: see :meth:`judge`."""
        history = self.history
        if key > history.newest:
            if not self.in_cluster or key[0] > (self.wall_clock() + AHEAD_WAIT_S) * 1000:
                return positions.UNKNOWN
            return None
        return positions.RESUMED if key >= history.horizon else positions.EXPIRED

    def first_batch(self, outcome, key):
        """The batch a subscriber starts with, counted: the messages after ``key`` if
        ``outcome`` is a resume, else the replay tail after its open or gap."""
        history = self.history
        if outcome == positions.RESUMED:
            offsets, encoded, every = self._newest_fitting(history.after(key))
            if not every:
                outcome = positions.EXPIRED
        if outcome == positions.RESUMED:
            lead = positions.control(positions.RESUMED, self.epoch, history.newest_offset)
        else:
            offsets, encoded = self.epoch_messages() if outcome == positions.EPOCH else self.tail()
            kind, reason = (positions.OPEN, None) if outcome == positions.OPEN else (positions.GAP, outcome)
            lead = positions.control(kind, self.epoch, history.newest_offset, reason)
        self.starts[outcome] += 1
        return Batch(encoded, None, offsets, lead)

    def tail(self):
        """The replay tail, as much of it as fits a first batch: ``(offsets, encoded)``."""
        offsets, encoded, _ = self._newest_fitting(self.history.tail(self.replay))
        return offsets, encoded

    def epoch_messages(self):
        """What a subscriber from another epoch gets: every message of this
        epoch when the history holds them all and they fit, else the replay tail."""
        history = self.history
        every = history.after(history.start)
        if every is not None:
            offsets, encoded, fit = self._newest_fitting(every)
            if fit:
                return offsets, encoded
        return self.tail()

    def _newest_fitting(self, messages):
        """The newest of ``messages`` (``(offset, encoded)`` pairs, newest first) that fit a
        first batch, oldest first: ``(offsets, encoded, whether all fit)``. It takes one
        message past those that fit, at most: a start costs its bound, not the history."""
        limit = None
        if self.first_batch_bytes is not None:
            # The longest lead a first batch may start with, its comma, and the frame's brackets.
            lead = positions.control(positions.GAP, self.epoch, self.history.newest_offset, positions.EXPIRED)
            limit = self.first_batch_bytes - self.counters.size() - len(lead) - 3
        offsets, encoded = [], []
        size = 0
        every = True
        for offset, text in messages:
            size += positions.sent_size(offset, text)
            if limit is not None and size > limit:
                every = False
                break
            offsets.append(offset)
            encoded.append(text)
        offsets.reverse()
        encoded.reverse()
        return offsets, encoded, every

    def gap_to_all(self, reason):
        """The batch every subscriber gets when it may have missed messages: what the
        history holds, after a ``gap`` for ``reason`` (its lead, for those with positions)."""
        offsets, encoded = self.epoch_messages()
        lead = positions.control(positions.GAP, self.epoch, self.history.newest_offset, reason)
        return Batch(encoded, None, offsets, lead)
