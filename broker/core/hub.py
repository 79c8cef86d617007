"""The room: subscribers, publish, per-iteration coalescing, replay, counters.

Rules this module keeps:

* A message is JSON-encoded once, when it is published.
* Everything published before a flush goes out in that flush, as one batch,
  in publish order; each wire form of a batch is built once, on first use,
  and shared by every subscriber of that form.
* The flush is scheduled, not timed: the first publish after a flush asks the
  event loop to run ``flush`` once the current iteration's callbacks are done,
  so an idle broker still sends at once and a busy one coalesces.
* A subscriber that cannot take a batch (its unsent bytes are over its bound)
  is unsubscribed, told why with a close frame and counted; the flush goes on
  to the others. A client its connection finds publishing too fast is dropped
  the same way (:meth:`Hub.drop`).
* Delivery latency costs two clock reads per flush and none per message or
  subscriber: the publish that schedules a flush notes the time, and the
  flush counts each of its messages in :class:`LatencyHistogram` at the age of
  that oldest message (an upper bound for every message of the batch). A
  relay's batch comes with the age of its first message.
* Every message the room sends has an offset (:mod:`broker.core.history`):
  a count here, or what the relay gives with it. The room keeps its last
  messages (``history``, at least the ``replay`` tail) at flush time, so
  nothing published before a subscriber joined arrives twice.
* A new subscriber gets the replay tail (the last ``replay`` messages) before
  any live batch. One with positions (a :class:`Positioned` form: every
  message in its envelope, :mod:`broker.protocol.positions`) gets first where
  it starts; when it gives the ``(epoch, offset)`` it last saw and the history
  holds every message after it, it gets those instead of the tail (a resume),
  else the tail after a ``gap``; after a gap of another epoch, every message
  of the room's epoch instead, when the history still holds them all (they
  are all new to it). An offset past the newest is ``unknown`` at once
  for a room alone. With a relay the broker may be behind its cluster: the
  subscriber waits, receiving nothing, until a delivery reaches that offset
  or AHEAD_WAIT_S pass (then it is ``unknown``), unless no broker can have
  given that offset yet: a cluster's offset is a Redis stream id, whose
  number is the millisecond Redis added it, and one more than AHEAD_WAIT_S
  past this broker's clock is ``unknown`` at once. A resume waits too while
  the cluster's epoch is in doubt (:meth:`Hub.doubt_epoch`: Redis away, and
  perhaps back without its data), until it is known again.
* Waiting costs a delivery one test, however many wait: they are kept by
  the offset they wait for (a heap), and a delivery looks at the lowest
  only; their deadlines, in the order they came, are looked at once a
  second (:meth:`Hub.sample`), and every one of them only when the epoch is
  known again.
* The epoch names the room's history: a new one for each room alone, the
  cluster's from the relay (:meth:`Hub.load`). When the history is lost
  (another epoch), every subscriber with positions is told, with a ``gap``,
  and every subscriber gets the new epoch's messages the history holds.
* With a relay (the cluster backplane, :mod:`broker.cluster.backplane`), a published
  message is encoded and handed to the relay, never sent from here: the hub
  sends only what the relay gives back through :meth:`Hub.deliver`, one call
  one batch, so every broker of a cluster sends one sequence. A relay that
  cannot take a message raises, and the publisher sees it.
* An announcement (:meth:`Hub.announce`, the audience count) is the broker's,
  not the room's: never relayed, replayed or counted as a message. It rides
  at the end of the next batch the room sends, and goes alone only when
  :meth:`Hub.send_announcement` finds it still waiting (a quiet room). A
  newer announcement replaces one not yet sent. A new subscriber gets the
  latest one after its replay, so it need not wait for the next change.
* A message published with a conflating key (:mod:`broker.core.conflation`)
  goes out in a batch of its own, written with its key, so that a client's
  queue can replace the value of that key still waiting; of two messages
  with one key in one flush only the later goes out. The messages around it
  keep their batches and their order. Without keys, nothing of this runs:
  the unkeyed broadcast pays one test per flush.
* Positions cost nothing to a subscriber without them: the envelopes are
  another form of the batch, built once, when a subscriber first asks.
* A subscriber may change its form (:meth:`Hub.move`: a stream attached to
  its session, or gone), but never during a flush: it would get the batch
  being sent once in each form.

No socket, no HTTP: the room delivers to a :class:`Subscriber` and relays
through a :class:`Relay`, the two seams below. Subscribers are grouped by
form, so a flush looks each form up once and then makes one call per
subscriber.
"""

import bisect
import collections
import heapq
import itertools
import secrets
import time
from typing import Hashable, NamedTuple, Optional, Protocol

from broker.core.history import History
from broker.protocol import frames, positions
from broker.protocol.positions import offset_key
from broker.protocol.close_codes import SLOW_CONSUMER, TOO_MANY_MESSAGES

# How long a subscriber resuming from an offset its broker has not delivered yet waits for it;
# in a cluster, also how far past this broker's clock a stream id may be and still be waited for.
AHEAD_WAIT_S = 5.0
# A waiting subscriber's record in Hub._resuming: what it resumes after, until when it waits, its writer, itself.
_SINCE = 0
_DEADLINE = 1
_WRITE = 2
_SUBSCRIBER = 3


class RelayUnavailable(Exception):
    """A relay cannot take a message now; the text says why, and the publisher sees it."""


class Subscriber(Protocol):
    """What the room delivers to: a client's connection, whatever its transport."""

    transport: str
    """A name for the counters (``"websocket"``, ``"xhr_streaming"``...)."""
    form: Optional[Hashable]
    """The wire form it takes (see :meth:`Batch.form`), or None for the batch itself."""

    def write(self, data, key=None) -> bool:
        """Take one batch in its form; False when over its bound (the room then
        drops it). ``key``: the batch is one message of that conflating key."""

    def disconnect(self, code: int, reason: str) -> None:
        """Close the client with ``code`` and ``reason`` (see :mod:`broker.protocol.close_codes`)."""


class Relay(Protocol):
    """What the room hands published messages to when brokers share it: the
    cluster backplane (:class:`broker.cluster.backplane.Backplane`). Without a
    relay the room is its own, in this process."""

    def __call__(self, encoded: str, once: Optional[tuple] = None, key: Optional[str] = None) -> None:
        """Take one message's JSON text for every broker's room, or raise
        :class:`RelayUnavailable`; ``once``: the idempotency key under which
        to take it at most once, ``key``: its conflating key (see :meth:`Hub.publish`)."""


class Positioned(NamedTuple):
    """The form of a subscriber with positions: the batch's ``inner`` form (see
    :meth:`Batch.form`), every message in its envelope."""

    inner: Optional[Hashable]


class Batch:
    """Messages flushed together; each wire form is built once, when first asked for.

    ``encoded`` holds each message's JSON text, ``raw`` its UTF-8 bytes as the
    raw websocket sends it (a string as itself, any other value as JSON),
    derived from ``encoded`` when not given. ``offsets`` holds the room
    messages' offsets; an announcement after them has none. ``lead``: the
    JSON text that opens the positioned form (a connection's start). ``key``:
    the conflating key of its one message, or None.
    """

    __slots__ = ("encoded", "offsets", "lead", "key", "_raw", "_sockjs_body", "_sockjs_frame", "_sockjs_websocket",
                 "_raw_websocket", "_streamed", "_positioned")

    def __init__(self, encoded, raw=None, offsets=(), lead=None, key=None):
        self.encoded = encoded
        self.offsets = offsets
        self.lead = lead
        self.key = key
        self._raw = raw
        self._sockjs_body = None
        self._sockjs_frame = None
        self._sockjs_websocket = None
        self._raw_websocket = None
        self._streamed = None
        self._positioned = None

    def __len__(self):
        return len(self.encoded)

    def with_announcement(self, encoded):
        """This batch with the JSON text ``encoded`` after its messages."""
        raw = None if self._raw is None else self._raw + [frames.raw_message(encoded)]
        return Batch(self.encoded + [encoded], raw, self.offsets, self.lead)

    def form(self, name):
        """The wire form a subscriber asked for by ``name``: an attribute's name
        (``"sockjs_websocket"``), a stream's ``(transport, chunked)`` (see
        :meth:`streamed`), a :class:`Positioned` form, or None for the batch itself."""
        if name is None:
            return self
        kind = type(name)
        if kind is tuple:
            return self.streamed(*name)
        if kind is Positioned:
            return self.positioned.form(name.inner)
        return getattr(self, name)

    @property
    def positioned(self):
        """This batch with every message in its position envelope, and its lead first."""
        if self._positioned is None:
            encoded = self.encoded
            texts = [positions.message(offset, text) for offset, text in zip(self.offsets, encoded)]
            texts += [positions.announcement(text) for text in encoded[len(texts):]]
            if self.lead is not None:
                texts.insert(0, self.lead)
            self._positioned = Batch(texts)
        return self._positioned

    @property
    def raw(self):
        if self._raw is None:
            self._raw = [frames.raw_message(e) for e in self.encoded]
        return self._raw

    @property
    def sockjs_body(self):
        """The encoded messages joined by commas: the inside of ``a[...]``."""
        if self._sockjs_body is None:
            self._sockjs_body = ",".join(self.encoded)
        return self._sockjs_body

    @property
    def sockjs_frame(self):
        """The SockJS ``a[...]`` frame."""
        if self._sockjs_frame is None:
            self._sockjs_frame = "a[" + self.sockjs_body + "]"
        return self._sockjs_frame

    @property
    def sockjs_websocket(self):
        """One websocket frame carrying the SockJS ``a[...]`` frame."""
        if self._sockjs_websocket is None:
            self._sockjs_websocket = frames.websocket_frame(self.sockjs_frame.encode())
        return self._sockjs_websocket

    @property
    def raw_websocket(self):
        """One websocket frame per message, unwrapped (the raw ``/websocket`` endpoint)."""
        if self._raw_websocket is None:
            self._raw_websocket = b"".join(frames.websocket_frame(r) for r in self.raw)
        return self._raw_websocket

    def streamed(self, transport, chunked):
        """The ``a[...]`` frame as a stream of ``transport`` carries it, chunked
        or not (:func:`broker.protocol.frames.stream_frame`)."""
        key = (transport, chunked)
        if self._streamed is None:
            self._streamed = {}
        elif key in self._streamed:
            return self._streamed[key]
        data = self._streamed[key] = frames.stream_frame(transport, self.sockjs_frame, chunked)
        return data


def _batch_of(indexes, encoded, raw, offsets):
    """The batch of the messages at ``indexes`` of a flush or a delivery."""
    return Batch([encoded[i] for i in indexes], None if raw is None else [raw[i] for i in indexes],
                 [offsets[i] for i in indexes])


class RateMeter:
    """Per-second rates of growing counters, over a sliding window of samples."""

    def __init__(self, window=10):
        self._samples = collections.deque(maxlen=window + 1)

    def sample(self, now, *counters):
        self._samples.append((now, counters))

    def rates(self):
        if len(self._samples) < 2:
            return None
        (t0, first), (t1, last) = self._samples[0], self._samples[-1]
        return tuple((b - a) / (t1 - t0) for a, b in zip(first, last))


class LatencyHistogram:
    """Counts of messages by latency in seconds, in fixed buckets: what a
    Prometheus histogram exposes, kept here as plain numbers.

    ``counts[i]`` is the messages of latency at most ``BOUNDS[i]`` and more
    than the bound before it; the last count is those over every bound.
    """

    BOUNDS = (0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)

    def __init__(self):
        self.counts = [0] * (len(self.BOUNDS) + 1)
        self.sum = 0.0

    def observe(self, seconds, messages=1):
        """Count ``messages`` messages of latency ``seconds``."""
        self.counts[bisect.bisect_left(self.BOUNDS, seconds)] += messages
        self.sum += seconds * messages

    def cumulative(self):
        """``[(bound, messages at most that late), ...]``, ending with ``(inf, all)``."""
        total = 0
        buckets = []
        for bound, count in zip(self.BOUNDS + (float("inf"),), self.counts):
            total += count
            buckets.append((bound, total))
        return buckets


class Hub:
    """One broadcast room.

    ``schedule(callback)`` must run ``callback`` soon on the event loop
    (``IOLoop.add_callback``); the hub calls it at most once per flush.
    ``relay(encoded)``, if given, takes every published message instead of the
    local flush (see the module's rules).
    """

    def __init__(self, schedule, replay=0, clock=time.monotonic, relay=None, history=0, history_seconds=0.0):
        self._schedule = schedule
        self._relay = relay
        self._clock = clock
        self._groups = {}
        self._resuming = {}
        self._ahead = []
        self._deadlines = collections.deque()
        self._arrivals = itertools.count()
        self._pending_encoded = []
        self._pending_raw = []
        self._pending_keys = None
        self._flush_scheduled = False
        self._oldest_pending = None
        self._offset = 0
        self._replay = replay
        self.history = History(max(history, replay), history_seconds)
        self.epoch = secrets.token_urlsafe(6)
        self._epoch_known = True
        self.starts = collections.Counter()
        self._announcement = None
        self._last_announcement = None
        self._meter = RateMeter()
        self.started = clock()
        self.by_transport = collections.Counter()
        self.messages_in = 0
        self.messages_out = 0
        self.flushes = 0
        self.dropped = collections.Counter()
        self.latency = LatencyHistogram()

    def __len__(self):
        return sum(len(group) for group in self._groups.values()) + len(self._resuming)

    def __iter__(self):
        return iter([s for group in self._groups.values() for s in group] + list(self._resuming))

    def subscribe(self, subscriber, since=None):
        """Add ``subscriber``; it first receives, in one batch, the replay tail
        and the latest announcement, if any. With positions it is told first
        where it starts, and resumes after ``since``, the ``(epoch, offset)``
        texts it last saw, when the history allows (see the module's rules)."""
        self.by_transport[subscriber.transport] += 1
        if type(subscriber.form) is not Positioned:
            offsets, encoded = self.history.tail(self._replay)
            self._join(subscriber, subscriber.write, Batch(encoded, None, offsets))
            return
        outcome, key = self._resumable(since)
        if outcome is None:
            record = [since, self._clock() + AHEAD_WAIT_S, subscriber.write, subscriber]
            self._resuming[subscriber] = record
            self._deadlines.append(record)
            if key is not None:
                self._wait_for(key, record)
        else:
            self._start(subscriber, subscriber.write, outcome, key)

    def _resumable(self, since):
        """How a subscriber asking to resume after ``since`` starts: an outcome
        of :data:`broker.protocol.positions.OUTCOMES`, or None to wait; and the key of its offset."""
        if since is None:
            return positions.OPEN, None
        if not self._epoch_known:
            return None, None
        epoch, offset = since
        if epoch != self.epoch:
            return positions.EPOCH, None
        try:
            key = offset_key(offset)
        except ValueError:
            return positions.UNKNOWN, None
        return self._outcome(key), key

    def _outcome(self, key):
        """A resume after ``key`` in this epoch: see :meth:`_resumable`."""
        if key > self.history.newest:
            if self._relay is None or key[0] > (time.time() + AHEAD_WAIT_S) * 1000:
                return positions.UNKNOWN
            return None
        return positions.RESUMED if key >= self.history.horizon else positions.EXPIRED

    def _start(self, subscriber, write, outcome, key):
        """Join ``subscriber`` with its start: the messages after ``key`` if
        ``outcome`` is a resume, else the replay tail after its open or gap."""
        history = self.history
        if outcome == positions.RESUMED:
            offsets, encoded = history.after(key)
            lead = positions.control(positions.RESUMED, self.epoch, history.newest_offset)
        else:
            offsets, encoded = self._epoch_messages() if outcome == positions.EPOCH else history.tail(self._replay)
            kind, reason = (positions.OPEN, None) if outcome == positions.OPEN else (positions.GAP, outcome)
            lead = positions.control(kind, self.epoch, history.newest_offset, reason)
        self.starts[outcome] += 1
        self._join(subscriber, write, Batch(encoded, None, offsets, lead))

    def _epoch_messages(self):
        """What a subscriber from another epoch gets: every message of this
        epoch when the history holds them all, else the replay tail."""
        history = self.history
        return history.after(history.start) or history.tail(self._replay)

    def _join(self, subscriber, write, batch):
        self._groups.setdefault(subscriber.form, {})[subscriber] = write
        sent = len(batch)
        if self._last_announcement is not None:
            batch = batch.with_announcement(self._last_announcement)
        if not batch.encoded and batch.lead is None:
            return
        if write(batch.form(subscriber.form)):
            self.messages_out += sent
        else:
            self.drop(subscriber, SLOW_CONSUMER)

    def _still_waiting(self, record):
        """Whether ``record`` is still the one of a subscriber waiting (not started, not gone)."""
        return self._resuming.get(record[_SUBSCRIBER]) is record

    def _wait_for(self, key, record):
        """Have the waiting subscriber of ``record`` start once a delivery reaches ``key``."""
        ahead = self._ahead
        heapq.heappush(ahead, (key, next(self._arrivals), record))
        if len(ahead) > 2 * len(self._resuming) + 16:  # those gone meanwhile: at most half
            ahead[:] = [entry for entry in ahead if self._still_waiting(entry[2])]
            heapq.heapify(ahead)

    def _resume(self, record, outcome, key):
        del self._resuming[record[_SUBSCRIBER]]
        self._start(record[_SUBSCRIBER], record[_WRITE], outcome, key)

    def _reached(self):
        """Start the waiting subscribers whose offset the room has reached."""
        ahead, newest = self._ahead, self.history.newest
        while ahead and ahead[0][0] <= newest:
            key, _, record = heapq.heappop(ahead)
            if self._still_waiting(record):
                self._resume(record, self._outcome(key), key)

    def _expire(self, now):
        """Start, as an unknown offset, the waiting subscribers that waited AHEAD_WAIT_S."""
        deadlines = self._deadlines
        while deadlines and deadlines[0][_DEADLINE] < now:
            record = deadlines.popleft()
            if self._still_waiting(record):
                outcome, key = self._resumable(record[_SINCE])
                self._resume(record, outcome or positions.UNKNOWN, key)

    def _judge_all(self):
        """Start every waiting subscriber that can be judged now; the others wait on for their offset."""
        self._ahead = []
        for record in tuple(self._resuming.values()):
            if not self._still_waiting(record):  # dropped as another started
                continue
            outcome, key = self._resumable(record[_SINCE])
            if outcome is not None:
                self._resume(record, outcome, key)
            elif key is not None:
                self._wait_for(key, record)

    def move(self, subscriber, old_form, write):
        """``subscriber``, whose form was ``old_form``, takes its new ``form``
        through ``write`` from now on (a stream attached to its session, or
        gone); nothing for one not subscribed. Never called from a flush."""
        waiting = self._resuming.get(subscriber)
        if waiting is not None:
            waiting[_WRITE] = write
            return
        group = self._groups.get(old_form)
        if group is not None and group.pop(subscriber, None) is not None:
            self._groups.setdefault(subscriber.form, {})[subscriber] = write

    def unsubscribe(self, subscriber):
        """Remove ``subscriber``; unknown subscribers are ignored."""
        group = self._groups.get(subscriber.form)
        if (group is not None and group.pop(subscriber, None) is not None
                or self._resuming.pop(subscriber, None) is not None):
            self.by_transport[subscriber.transport] -= 1

    def publish(self, message, once=None, key=None):
        """Queue ``message`` for every subscriber; returns how many it will reach.

        Raises ValueError, and queues nothing, for a message with no JSON or
        no UTF-8 text (NaN, bytes, a string with a lone surrogate); with a
        relay, whatever the relay raises when it cannot take the message.
        ``once`` goes to the relay with the message: a cluster's idempotency
        key (:mod:`broker.core.idempotency`; a room alone has its publisher
        look the key up first); such a message is counted in once the relay
        says it appended it (:meth:`appended`). ``key``: the message's conflating key.
        """
        encoded = frames.encode_message(message)
        raw = (message if isinstance(message, str) else encoded).encode()
        if self._relay is not None:
            if once is None and key is None:
                self._relay(encoded)
            else:
                self._relay(encoded, once, key)
            if once is None:
                self.messages_in += 1
            return len(self)
        if key is not None and self._pending_keys is None:
            self._pending_keys = [None] * len(self._pending_encoded)
        if self._pending_keys is not None:
            self._pending_keys.append(key)
        self._pending_encoded.append(encoded)
        self._pending_raw.append(raw)
        self.messages_in += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._oldest_pending = self._clock()
            self._schedule(self.flush)
        return len(self)

    def appended(self):
        """The relay appended a message published with ``once``: its key was new. Only
        then is it counted among the messages in (a retry appends nothing), so that
        the count never goes back."""
        self.messages_in += 1

    def pending_offset(self):
        """The offset the message published last will have, in a room alone."""
        return str(self._offset + len(self._pending_encoded))

    def flush(self):
        """Send everything published since the last flush as one batch."""
        self._flush_scheduled = False
        encoded = self._pending_encoded
        if not encoded:
            return
        first = self._offset + 1
        self._offset += len(encoded)
        offsets = range(first, self._offset + 1)
        raw, keys = self._pending_raw, self._pending_keys
        self._pending_encoded = []
        self._pending_raw = []
        self._pending_keys = None
        if keys is None:
            self._send(Batch(encoded, raw, offsets), self._oldest_pending)
        else:
            self._send_keyed(encoded, raw, offsets, keys, self._oldest_pending)

    def deliver(self, encoded, offsets, age=0.0, keys=None):
        """Send ``encoded`` (a list of JSON texts, in the relay's order) at
        ``offsets`` now, as one batch (and one more for each message with a
        conflating key, ``keys``: each one's or None); ``age``: seconds since
        the first of them was published."""
        if keys is None:
            self._send(Batch(encoded, None, offsets), self._clock() - age)
        else:
            self._send_keyed(encoded, None, offsets, keys, self._clock() - age)

    def _send_keyed(self, encoded, raw, offsets, keys, oldest):
        """Send messages some of which have a conflating key: each run of
        unkeyed ones as one batch, each keyed one alone, the earlier of two
        with one key left out (see the module's rules)."""
        last_of = {key: index for index, key in enumerate(keys) if key is not None}
        run = []
        for index, key in enumerate(keys):
            if key is None:
                run.append(index)
            elif last_of[key] == index:
                if run:
                    self._send(_batch_of(run, encoded, raw, offsets), oldest)
                    run = []
                self._send(Batch([encoded[index]], None if raw is None else [raw[index]], [offsets[index]],
                                 key=key), oldest)
        if run:
            self._send(_batch_of(run, encoded, raw, offsets), oldest)

    def announce(self, encoded):
        """Send ``encoded``, the JSON text of the broker's own message, to every subscriber once
        (see the module's rules)."""
        self._announcement = self._last_announcement = encoded

    def send_announcement(self):
        """Send the announcement still waiting for a batch, alone."""
        if self._announcement is not None:
            self._send(Batch([]), None)

    def load(self, epoch, start, offsets, encoded, keys=None):
        """Take the cluster's history without sending it: in ``epoch``, the
        messages ``encoded`` (JSON texts, oldest first) at ``offsets`` (with
        their conflating ``keys``), the history having started after offset ``start``. Another epoch than the
        room's is a lost history: every subscriber gets the new epoch's
        messages the history holds (those with positions after a ``gap``), and
        those waiting to resume start with it."""
        changed = epoch != self.epoch
        self.epoch = epoch
        self.history.restart(start)
        self.history.add(offsets, encoded, self._clock(), keys)
        if changed:
            offsets, encoded = self._epoch_messages()
            gap = Batch(encoded, None, offsets, positions.control(positions.GAP, epoch, self.history.newest_offset,
                                                                  positions.EPOCH))
            self._write_all(gap)
        self.confirm_epoch()

    def doubt_epoch(self):
        """The cluster's epoch may be changing (Redis is away): resumes wait
        until :meth:`confirm_epoch` or :meth:`load`."""
        self._epoch_known = False

    def confirm_epoch(self):
        """The cluster's epoch is the room's: judge the resumes that waited for it."""
        self._epoch_known = True
        if self._resuming:
            self._judge_all()

    def _send(self, batch, oldest):
        """Send ``batch`` (and the announcement, if one waits) to every subscriber; ``oldest``:
        when its first message was published (None for an announcement alone)."""
        messages = len(batch)
        offsets, encoded, key = batch.offsets, batch.encoded, batch.key
        if self._announcement is not None and key is None:
            batch, self._announcement = batch.with_announcement(self._announcement), None
        self.flushes += 1
        self.messages_out += messages * self._write_all(batch)
        now = self._clock()
        self.history.add(offsets, encoded, now, None if key is None else [key])
        if oldest is not None:
            self.latency.observe(now - oldest, messages)
        if self._ahead and self._ahead[0][0] <= self.history.newest and self._epoch_known:
            self._reached()

    def _write_all(self, batch):
        """Write ``batch`` to every subscriber (one of no messages, a ``gap``,
        to those with positions only), drop those that cannot take it; returns
        how many took it."""
        slow = []
        reached = 0
        key = batch.key
        empty = not batch.encoded
        for form, group in tuple(self._groups.items()):
            if not group or empty and type(form) is not Positioned:
                continue
            data = batch.form(form)
            writers = tuple(group.items())
            if key is None:
                slow += [s for s, write in writers if not write(data)]
            else:
                slow += [s for s, write in writers if not write(data, key)]
            reached += len(writers)
        for subscriber in slow:
            self.drop(subscriber, SLOW_CONSUMER)
        return reached - len(slow)

    def drop(self, subscriber, why):
        """Unsubscribe ``subscriber``, close it with ``why`` (a code and reason:
        SLOW_CONSUMER, TOO_MANY_MESSAGES) and count it."""
        self.unsubscribe(subscriber)
        self.dropped[why] += 1
        subscriber.disconnect(*why)

    def sample(self):
        """Record the counters for the per-second rates, age the history and
        the waiting subscribers; call about once a second."""
        now = self._clock()
        self._meter.sample(now, self.messages_in, self.messages_out)
        self.history.trim(now)
        if self._deadlines:
            self._expire(now)

    def stats(self):
        """Counters and rates, as plain data."""
        rates = self._meter.rates() or (0.0, 0.0)
        return {
            "connections_total": len(self),
            "connections": {name: n for name, n in sorted(self.by_transport.items()) if n},
            "messages_in": self.messages_in,
            "messages_out": self.messages_out,
            "messages_in_per_s": round(rates[0], 1),
            "messages_out_per_s": round(rates[1], 1),
            "flushes": self.flushes,
            "slow_consumer_disconnects": self.dropped[SLOW_CONSUMER],
            "rate_limited_disconnects": self.dropped[TOO_MANY_MESSAGES],
            "history": {"epoch": self.epoch, "messages": len(self.history), "newest": self.history.newest_offset,
                        "forgotten": self.history.forgotten},
            "starts": {outcome: self.starts[outcome] for outcome in positions.OUTCOMES},
            "uptime_s": round(self._clock() - self.started, 3),
        }
