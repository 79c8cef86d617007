"""The room: who subscribes, what is published, and the fan-out of every batch to every subscriber.

Rules this module keeps:

* A message is JSON-encoded once, when it is published, and refused there if
  its JSON text, escapes included, is over ``max_message_size``: no message
  kept (history, a cluster's stream) or sent is larger. Everything published
  before a flush goes out in that flush, as one batch
  (:class:`broker.protocol.batch.Batch`), in publish order; each wire form of
  a batch is built once and shared by every subscriber of that form. The path
  of a message: :meth:`Hub.publish` (in a cluster, the relay, then
  :meth:`Hub.deliver`), :meth:`Hub.flush`, :meth:`Hub._send`,
  :meth:`Hub._write_all`, each subscriber's writer.
* The flush is scheduled, not timed: the first publish after a flush asks the
  event loop to run ``flush`` once the current iteration's callbacks are done
  (:mod:`broker.core.pending`), so an idle broker sends at once and a busy one
  coalesces. Its latency costs two clock reads a flush, none a subscriber.
* A subscriber that cannot take a batch (over its bound) is unsubscribed,
  told why and counted; the flush goes on to the others. So is a client
  publishing too fast (:meth:`Hub.drop`).
* Every message has an offset: a count here, or the relay's. The room keeps
  its last messages (:mod:`broker.core.history`) at flush time, so nothing
  published before a subscriber joined arrives twice.
* A new subscriber gets its first batch before any live one: the replay tail,
  or with positions where it starts and what follows
  (:mod:`broker.core.resumes`: open, resumed, a gap, or a wait for an offset
  a cluster's broker has not delivered yet, one test a delivery however many
  wait). When the history is lost (another epoch, :meth:`Hub.load`), or a
  cluster's broker missed messages (:meth:`Hub.tell_gap`), every subscriber
  is told, with a ``gap``, and given what the history holds.
* With a relay (:mod:`broker.cluster.backplane`) a published message is handed
  to the relay, never sent from here: the room sends what the relay gives
  back (:meth:`Hub.deliver`, one call one batch), so every broker of a cluster
  sends one sequence. A relay that cannot take a message raises.
* The room's counters (:mod:`broker.core.counters`) are state: every first
  batch and every ``gap`` carries each one's latest message, in offset
  order; keeping them costs a test on a keyed batch only. The broker's
  announcement (:mod:`broker.core.announcement`) rides the next batch.
* A message with a conflating key goes out in a batch of its own
  (:func:`broker.core.conflation.batches`); without keys, one test a flush.
* A subscriber may change its form (:meth:`Hub.move`), never during a flush.
* Its figures (``FIGURES``) are read when ``/stats`` or ``/metrics`` asks.

No socket, no HTTP: the room delivers to a :class:`broker.core.seams.Subscriber`
through the :class:`broker.core.seams.Writer` it joined with, kept beside it by form
(a flush builds each form once, one call a subscriber); it relays through a
:class:`broker.core.seams.Relay`.
"""

import collections
import time
from typing import Optional, Tuple

from broker.core import conflation, counters, figures
from broker.core.announcement import Announcement
from broker.core.conflation import ConflatingKey
from broker.core.counters import Counters
from broker.core.figures import COUNTER, GAUGE, HISTOGRAM, Figure, Metric
from broker.core.history import History
from broker.core.meters import LatencyHistogram, RateMeter
from broker.core.pending import Pending
from broker.core.resumes import AHEAD_WAIT_S, Keeping, Resumes, Waiting
from broker.core.seams import Relay, Subscriber, Writer
from broker.protocol import frames, positions
from broker.protocol.batch import Batch, Positioned
from broker.protocol.close_codes import SLOW_CONSUMER, TOO_MANY_MESSAGES

# Clients the broker cut, by reason: the room counts two reasons, the transports' ping wheel the third.
DISCONNECTS = Metric("disconnects", COUNTER, "Clients cut off by the broker: too slow to read, publishing too "
                     "fast, or no pong within --ws-ping-timeout", ("reason",))


class Hub:
    """One broadcast room.

    ``schedule(callback)`` must run ``callback`` soon on the event loop
    (Tornado's ``IOLoop.add_callback``): the hub asks it to run :meth:`flush`,
    at most once per flush. ``relay``, if given, takes every published message
    instead of the local flush (see the module's rules). ``max_message_size``:
    the most bytes of JSON text, escapes included, of a message the room keeps
    and sends (None: no bound; a running broker's is ``--max-message-size``).
    """

    name = ""
    """The room's name: ``""`` for the default room (:mod:`broker.core.rooms` names the others)."""

    def __init__(self, schedule, keeping=Keeping(), clock=time.monotonic, relay: Optional[Relay] = None,
                 max_message_size=None):
        self._schedule = schedule
        self._relay = relay
        self.max_message_size = max_message_size
        self._clock = clock
        self._groups = {}
        self._pending = Pending()
        self.history = History(max(keeping.history, keeping.replay), keeping.history_seconds)
        self.counters = Counters(counters.most_counters(keeping.first_batch_bytes))
        self.resumes = Resumes(self.history, keeping, relay is not None, self.counters)
        self._resuming = self.resumes.waiting
        self._sent_until = (0, 0)
        self.announcement = Announcement()
        self._meter = RateMeter()
        self.started = clock()
        self.by_transport = collections.Counter()
        self.messages_in = 0
        self.messages_out = 0
        self.flushes = 0
        self.dropped = collections.Counter()
        self.latency = LatencyHistogram()

    @property
    def epoch(self):
        """The name of the room's history (see :mod:`broker.core.resumes`)."""
        return self.resumes.epoch

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
            since = None
        outcome, place = self.resumes.judge(since)
        if outcome is None:
            self._resuming.add(Waiting(since, self._clock() + AHEAD_WAIT_S, subscriber.writer, subscriber), place)
        else:
            self._start(subscriber, subscriber.writer, outcome, place)

    def _start(self, subscriber, writer, outcome, place):
        """Join ``subscriber`` with the first batch of its start (see :mod:`broker.core.resumes`) after
        ``place``, an offset's place in the room's order (:func:`broker.protocol.positions.offset_key`);
        one without positions, with the replay tail."""
        if type(subscriber.form) is not Positioned:
            offsets, encoded = self.resumes.tail()
            self._join(subscriber, writer, Batch(encoded, None, offsets))
            return
        self._join(subscriber, writer, self.resumes.first_batch(outcome, place))

    def _join(self, subscriber, writer, batch):
        self._groups.setdefault(subscriber.form, {})[subscriber] = writer
        batch = self._with_counters(batch)
        sent = len(batch)
        batch = self.announcement.for_newcomer(batch)
        if not batch.encoded and batch.lead is None:
            return
        if writer.write_batch(batch.form(subscriber.form), None):
            self.messages_out += sent
        else:
            self.drop(subscriber, SLOW_CONSUMER)

    def _with_counters(self, batch):
        """``batch``, a first batch or a gap told to all, with every counter's latest message."""
        offsets, encoded = self.counters.merged(batch.offsets, batch.encoded)
        return batch if encoded is batch.encoded else Batch(encoded, None, offsets, batch.lead)

    def _start_reached(self):
        """Start the waiting subscribers whose offset the room has reached."""
        for record, place in self._resuming.reached(self.history.newest):
            self._start(record.subscriber, record.writer, self.resumes.outcome(place), place)

    def _start_expired(self, now):
        """Start, as an unknown offset (an open, for one that opened), the waiting subscribers
        that waited AHEAD_WAIT_S."""
        for record in self._resuming.expired(now):
            outcome, place = self.resumes.judge(record.since)
            if outcome is None:
                outcome = positions.OPEN if record.since is None else positions.UNKNOWN
            self._start(record.subscriber, record.writer, outcome, place)

    def _judge_waiting(self):
        """Start every waiting subscriber that can be judged now; the others wait on for their offset."""
        resuming = self._resuming
        for record in resuming.every():
            outcome, place = self.resumes.judge(record.since)
            if outcome is not None:
                resuming.take(record)
                self._start(record.subscriber, record.writer, outcome, place)
            elif place is not None:
                resuming.wait_for(place, record)

    def move(self, subscriber, old_form, writer):
        """``subscriber``, whose form was ``old_form``, takes its new ``form``
        through ``writer`` from now on (a stream attached to its session, or
        gone); nothing for one not subscribed. Never called from a flush."""
        waiting = self._resuming.get(subscriber)
        if waiting is not None:
            waiting.writer = writer
            return
        group = self._groups.get(old_form)
        if group is not None and group.pop(subscriber, None) is not None:
            self._groups.setdefault(subscriber.form, {})[subscriber] = writer

    def unsubscribe(self, subscriber):
        """Remove ``subscriber``; unknown subscribers are ignored."""
        group = self._groups.get(subscriber.form)
        if (group is not None and group.pop(subscriber, None) is not None
                or self._resuming.remove(subscriber)):
            self.by_transport[subscriber.transport] -= 1

    def publish(self, message, key=None):
        """Queue ``message`` for every subscriber; returns how many it will reach.

        Raises ValueError, and queues nothing, for a message with no JSON or no UTF-8 text
        (NaN, bytes, a lone surrogate), :class:`broker.protocol.frames.MessageTooBig` for one
        whose JSON text is over ``max_message_size``; with a relay, what the relay raises
        when it cannot take it. ``key``: the message's conflating key (a backend's or a client's,
        never a counter's: :meth:`count`)."""
        encoded, raw = self.encode(message)
        return self._publish_encoded(encoded, raw, None if key is None else ConflatingKey(key))

    def encode(self, message):
        """``message``'s JSON text as the room keeps and sends it, and the bytes the raw websocket
        sends; ValueError, and :class:`broker.protocol.frames.MessageTooBig`, as :meth:`publish` raises them."""
        encoded = frames.encode_message(message, self.max_message_size)
        return encoded, (message if isinstance(message, str) else encoded).encode()

    def _publish_encoded(self, encoded, raw, key=None):
        """Queue a message, ``encoded`` and ``raw``, of the :class:`broker.core.conflation.ConflatingKey`
        ``key`` if any, as :meth:`publish` does."""
        if self._relay is not None:
            if key is None:
                self._relay(encoded)
            else:
                self._relay(encoded, key=key.text)
            self.messages_in += 1
            return len(self)
        self.messages_in += 1
        if self._pending.add(encoded, raw, key, self._clock):
            self._schedule(self.flush)
        return len(self)

    def count(self, name, operation, given):
        """Apply ``operation`` (``add``, ``max``) with ``given`` (a
        :class:`broker.core.counters.Amount`) to counter ``name`` of a room alone, and
        queue its new total for every subscriber if it changed: ``(recipients, total's
        text)``. ValueError, changing and queueing nothing, past the counters' bounds."""
        change = self.counters.change(name, operation, given)
        value = change.value
        if not change.changed:
            return len(self), value
        # The broker's own message, bounded by the counters' bounds, not by --max-message-size:
        # its total has changed, and a cluster's script appends it unchecked too.
        encoded = frames.encode_message(counters.message(name, value))
        return self._publish_encoded(encoded, encoded.encode(), counters.conflating_key(name)), value

    def appended(self):
        """An Engine appended a message in this room's cluster stream, not through :meth:`publish`
        (:mod:`broker.cluster.redis_engine`): it counts among the messages in. One with an
        idempotency key counts only once Redis appended it (a retry appends nothing), so that
        the count never goes back."""
        self.messages_in += 1

    def pending_offset(self):
        """The offset the message published last will have, in a room alone."""
        return self._pending.next_offset()

    def flush(self):
        """Send everything published since the last flush (:mod:`broker.core.pending`) as one batch."""
        taken = self._pending.take()
        if taken is None:
            return
        batch, keys = taken
        if keys is None:
            self._send(batch, self._pending.oldest)
        else:
            self._send_keyed(batch, keys, self._pending.oldest)

    def deliver(self, encoded, offsets, age=0.0, keys=None):
        """Send ``encoded`` (a list of JSON texts, in the relay's order) at
        ``offsets`` now, as one batch (and one more for each message with a
        conflating key, ``keys``: the text of each one's, or None); ``age``: seconds
        since the first of them was published."""
        if keys is None:
            self._send(Batch(encoded, None, offsets), self._clock() - age)
        else:
            self._send_keyed(Batch(encoded, None, offsets), [None if text is None else counters.key_of(text)
                                                             for text in keys], self._clock() - age)

    def _send_keyed(self, messages, keys, oldest):
        """Send ``messages``, a batch some of whose messages have a conflating key (``keys``: each
        one's :class:`broker.core.conflation.ConflatingKey`, or None)."""
        for batch in conflation.batches(messages, keys):
            self._send(batch, oldest)

    def send_announcement(self):
        """Send the announcement still waiting for a batch, alone."""
        if self.announcement.waiting is not None:
            self._send(Batch([]), None)

    def load(self, epoch, start, offsets, encoded, keys=None, latest=()):
        """Take the cluster's history without sending it: in ``epoch``, the messages ``encoded``
        (JSON texts, oldest first) at ``offsets`` (their conflating ``keys``), after offset ``start``,
        and each counter's ``latest`` message, ``[(name, offset, encoded), ...]``. Another epoch
        is a lost history: every subscriber is told (:meth:`tell_gap`), those waiting start."""
        changed = epoch != self.epoch
        self.resumes.epoch = epoch
        self._sent_until = self.history.newest
        self.history.restart(start)
        self.history.add(offsets, encoded, self._clock(), keys)
        if changed:
            self.counters.restart()
        self.counters.load(latest)
        if changed:
            self.tell_gap(positions.EPOCH)
        self.confirm_epoch()

    def tell_gap(self, reason):
        """The subscribers may have missed messages (``reason``): each with positions is
        told a ``gap``, given what the history holds and the counters; each without, only
        what is newer than what it was sent before the last :meth:`load`."""
        batch = self._with_counters(self.resumes.gap_to_all(reason))
        sent_until = self._sent_until
        self._write_all(batch, batch.picked([i for i, offset in enumerate(batch.offsets)
                                             if positions.offset_key(offset) > sent_until]))

    def doubt_epoch(self, opens=False):
        """The cluster's epoch may be changing (Redis is away): resumes wait
        until :meth:`confirm_epoch` or :meth:`load`; with ``opens`` (a room whose history
        was never loaded), opens too."""
        self.resumes.epoch_known = False
        self.resumes.opens_wait = opens

    def confirm_epoch(self):
        """The cluster's epoch is the room's: judge the resumes (and opens) that waited for it."""
        self.resumes.epoch_known = True
        self.resumes.opens_wait = False
        if self._resuming:
            self._judge_waiting()

    def _send(self, batch, oldest):
        """Send ``batch`` (and the announcement, if one waits) to every subscriber; ``oldest``:
        when its first message was published (None for an announcement alone)."""
        messages = len(batch)
        offsets, encoded, key = batch.offsets, batch.encoded, batch.key
        batch = self.announcement.riding(batch)
        self.flushes += 1
        self.messages_out += messages * self._write_all(batch)
        now = self._clock()
        if key is None:
            self.history.add(offsets, encoded, now)
        else:
            self.history.add(offsets, encoded, now, [key.text])
            if key.counter is not None:
                self.counters.sent(key.counter, offsets[0], encoded[0])
        if oldest is not None:
            self.latency.observe(now - oldest, messages)
        if self._resuming.due(self.history.newest) and self.resumes.epoch_known:
            self._start_reached()

    def _write_all(self, batch, unpositioned=None):
        """Write ``batch`` to every subscriber (``unpositioned`` instead, if given, to those
        without positions; one of no messages to those with positions only), drop those that
        cannot take it; returns how many took it."""
        slow = []
        reached = 0
        key = None if batch.key is None else batch.key.text
        for form, group in tuple(self._groups.items()):
            sent = batch if unpositioned is None or type(form) is Positioned else unpositioned
            if not group or not sent.encoded and type(form) is not Positioned:
                continue
            data = sent.form(form)
            writers: Tuple[Tuple[Subscriber, Writer], ...] = tuple(group.items())
            slow += [s for s, writer in writers if not writer.write_batch(data, key)]
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
        if self._resuming:
            self._start_expired(now)

    def stats(self):
        """Counters and rates, as plain data: its ``/stats`` entry."""
        return figures.stats_of(self)

    def _per_second(self, which):
        """Messages in (``which`` 0) or out (1) a second, over the rate meter's window."""
        return round((self._meter.rates() or (0.0, 0.0))[which], 1)

    def _uptime(self):
        return round(self._clock() - self.started, 3)

    FIGURES = (
        Figure("connections_total", len),
        Figure("connections", lambda hub: {name: n for name, n in sorted(hub.by_transport.items()) if n}),
        Figure(None, lambda hub: dict(sorted(hub.by_transport.items())),
               Metric("connections", GAUGE, "Subscribed SockJS and raw websocket connections, by transport",
                      ("transport",))),
        Figure("messages_in", "messages_in", Metric("messages_in", COUNTER, "Messages published (by clients and "
                                                    "POST /publish)")),
        Figure("messages_out", "messages_out", Metric("messages_out", COUNTER, "Messages delivered, one per "
                                                      "subscriber reached")),
        Figure("messages_in_per_s", lambda hub: hub._per_second(0)),
        Figure("messages_out_per_s", lambda hub: hub._per_second(1)),
        Figure("flushes", "flushes", Metric("flushes", COUNTER, "Batches sent")),
        Figure("slow_consumer_disconnects", lambda hub: hub.dropped[SLOW_CONSUMER], DISCONNECTS, ("slow_consumer",)),
        Figure("rate_limited_disconnects", lambda hub: hub.dropped[TOO_MANY_MESSAGES], DISCONNECTS,
               ("rate_limited",)),
        Figure(None, "latency", Metric("delivery_latency_seconds", HISTOGRAM, "Time from publish to the end of "
                                       "the flush that writes a message to every subscriber; each message counts "
                                       "at its batch's oldest message's age")),
        Figure("history.epoch", "epoch"),
        Figure("history.messages", lambda hub: len(hub.history),
               Metric("history_messages", GAUGE, "Messages kept for clients resuming (--history)")),
        Figure("history.newest", "history.newest_offset"),
        Figure("history.forgotten", "history.forgotten",
               Metric("history_forgotten", COUNTER, "Messages that left the history, by its count or its age")),
        Figure("starts", lambda hub: {outcome: hub.resumes.starts[outcome] for outcome in positions.OUTCOMES},
               Metric("position_starts", COUNTER, "Connections with positions, by how they started: open, "
                      "resumed, or a gap by its reason", ("outcome",))),
        Figure("uptime_s", _uptime),
    )
