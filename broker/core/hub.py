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
* A new subscriber gets the replay buffer (the last N flushed messages) before
  any live batch; since replay is recorded at flush time, nothing published
  before it joined arrives twice.
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
import time
from typing import Hashable, Optional, Protocol

from broker.protocol import frames
from broker.protocol.close_codes import SLOW_CONSUMER, TOO_MANY_MESSAGES



class RelayUnavailable(Exception):
    """A relay cannot take a message now; the text says why, and the publisher sees it."""


class Subscriber(Protocol):
    """What the room delivers to: a client's connection, whatever its transport."""

    transport: str
    """A name for the counters (``"websocket"``, ``"xhr_streaming"``...)."""
    form: Optional[Hashable]
    """The wire form it takes (see :meth:`Batch.form`), or None for the batch itself."""

    def write(self, data) -> bool:
        """Take one batch in its form; False when over its bound (the room then drops it)."""

    def disconnect(self, code: int, reason: str) -> None:
        """Close the client with ``code`` and ``reason`` (see :mod:`broker.protocol.close_codes`)."""


class Relay(Protocol):
    """What the room hands published messages to when brokers share it: the
    cluster backplane (:class:`broker.cluster.backplane.Backplane`). Without a
    relay the room is its own, in this process."""

    def __call__(self, encoded: str) -> None:
        """Take one message's JSON text for every broker's room, or raise :class:`RelayUnavailable`."""


class Batch:
    """Messages flushed together; each wire form is built once, when first asked for.

    ``encoded`` holds each message's JSON text, ``raw`` its UTF-8 bytes as the
    raw websocket sends it (a string as itself, any other value as JSON),
    derived from ``encoded`` when not given.
    """

    __slots__ = ("encoded", "_raw", "_sockjs_body", "_sockjs_frame", "_sockjs_websocket",
                 "_raw_websocket", "_streamed")

    def __init__(self, encoded, raw=None):
        self.encoded = encoded
        self._raw = raw
        self._sockjs_body = None
        self._sockjs_frame = None
        self._sockjs_websocket = None
        self._raw_websocket = None
        self._streamed = None

    def __len__(self):
        return len(self.encoded)

    def with_announcement(self, encoded):
        """This batch with the JSON text ``encoded`` after its messages."""
        raw = None if self._raw is None else self._raw + [frames.raw_message(encoded)]
        return Batch(self.encoded + [encoded], raw)

    def form(self, name):
        """The wire form a subscriber asked for by ``name``: an attribute's name
        (``"sockjs_websocket"``), a stream's ``(transport, chunked)`` (see
        :meth:`streamed`), or None for the batch itself."""
        if name is None:
            return self
        if type(name) is tuple:
            return self.streamed(*name)
        return getattr(self, name)

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

    def __init__(self, schedule, replay=0, clock=time.monotonic, relay=None):
        self._schedule = schedule
        self._relay = relay
        self._clock = clock
        self._groups = {}
        self._pending_encoded = []
        self._pending_raw = []
        self._flush_scheduled = False
        self._oldest_pending = None
        self._replay = collections.deque(maxlen=replay) if replay > 0 else None
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
        return sum(len(group) for group in self._groups.values())

    def __iter__(self):
        return iter([s for group in self._groups.values() for s in group])

    def subscribe(self, subscriber):
        """Add ``subscriber``; it first receives the replay buffer and the latest
        announcement, if any, in one batch."""
        self._groups.setdefault(subscriber.form, {})[subscriber] = subscriber.write
        self.by_transport[subscriber.transport] += 1
        if self._replay or self._last_announcement is not None:
            batch = Batch(list(self._replay or ()))
            replayed = len(batch)
            if self._last_announcement is not None:
                batch = batch.with_announcement(self._last_announcement)
            if subscriber.write(batch.form(subscriber.form)):
                self.messages_out += replayed
            else:
                self.drop(subscriber, SLOW_CONSUMER)

    def move(self, subscriber, old_form, write):
        """``subscriber``, whose form was ``old_form``, takes its new ``form``
        through ``write`` from now on (a stream attached to its session, or
        gone); nothing for one not subscribed. Never called from a flush."""
        group = self._groups.get(old_form)
        if group is not None and group.pop(subscriber, None) is not None:
            self._groups.setdefault(subscriber.form, {})[subscriber] = write

    def unsubscribe(self, subscriber):
        """Remove ``subscriber``; unknown subscribers are ignored."""
        group = self._groups.get(subscriber.form)
        if group is not None and group.pop(subscriber, None) is not None:
            self.by_transport[subscriber.transport] -= 1

    def publish(self, message):
        """Queue ``message`` for every subscriber; returns how many it will reach.

        Raises ValueError, and queues nothing, for a message with no JSON or
        no UTF-8 text (NaN, bytes, a string with a lone surrogate); with a
        relay, whatever the relay raises when it cannot take the message.
        """
        encoded = frames.encode_message(message)
        raw = (message if isinstance(message, str) else encoded).encode()
        if self._relay is not None:
            self._relay(encoded)
            self.messages_in += 1
            return len(self)
        self._pending_encoded.append(encoded)
        self._pending_raw.append(raw)
        self.messages_in += 1
        if not self._flush_scheduled:
            self._flush_scheduled = True
            self._oldest_pending = self._clock()
            self._schedule(self.flush)
        return len(self)

    def flush(self):
        """Send everything published since the last flush as one batch."""
        self._flush_scheduled = False
        if not self._pending_encoded:
            return
        batch = Batch(self._pending_encoded, self._pending_raw)
        self._pending_encoded = []
        self._pending_raw = []
        self._send(batch, self._oldest_pending)

    def deliver(self, encoded, age=0.0):
        """Send ``encoded`` (a list of JSON texts, in the relay's order) now, as
        one batch; ``age``: seconds since the first of them was published."""
        self._send(Batch(encoded), self._clock() - age)

    def announce(self, encoded):
        """Send ``encoded``, the JSON text of the broker's own message, to every subscriber once
        (see the module's rules)."""
        self._announcement = self._last_announcement = encoded

    def send_announcement(self):
        """Send the announcement still waiting for a batch, alone."""
        if self._announcement is not None:
            self._send(Batch([]), None)

    def remember(self, encoded):
        """Add ``encoded`` (JSON texts, oldest first) to the replay buffer without sending it:
        the room's history from before this broker started."""
        if self._replay is not None:
            self._replay.extend(encoded)

    def _send(self, batch, oldest):
        """Send ``batch`` (and the announcement, if one waits) to every subscriber; ``oldest``:
        when its first message was published (None for an announcement alone)."""
        self.remember(batch.encoded)
        messages = len(batch)
        if self._announcement is not None:
            batch, self._announcement = batch.with_announcement(self._announcement), None
        self.flushes += 1
        slow = []
        reached = 0
        for form, group in tuple(self._groups.items()):
            if not group:
                continue
            data = batch.form(form)
            writers = tuple(group.items())
            slow += [s for s, write in writers if not write(data)]
            reached += len(writers)
        self.messages_out += messages * (reached - len(slow))
        if oldest is not None:
            self.latency.observe(self._clock() - oldest, messages)
        for subscriber in slow:
            self.drop(subscriber, SLOW_CONSUMER)

    def drop(self, subscriber, why):
        """Unsubscribe ``subscriber``, close it with ``why`` (a code and reason:
        SLOW_CONSUMER, TOO_MANY_MESSAGES) and count it."""
        self.unsubscribe(subscriber)
        self.dropped[why] += 1
        subscriber.disconnect(*why)

    def sample(self):
        """Record the counters for the per-second rates; call about once a second."""
        self._meter.sample(self._clock(), self.messages_in, self.messages_out)

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
            "uptime_s": round(self._clock() - self.started, 3),
        }
