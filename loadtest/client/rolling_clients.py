"""A rolling restart's clients: resuming subscribers that follow the cluster as its brokers leave and come back.

Rules:

- A first connection that fails is tried again after a draw in ``[0, FIRST_BACKOFF_S]``,
  ``ATTEMPTS`` times at most. Once it follows (:meth:`RollingGroup.follow`), a subscriber whose
  connection ends comes back after a draw in ``[0, backoff]``, resuming, to the other brokers
  in an order drawn from its number and the broker it lost (:func:`reconnect_order`).
- A subscriber is *on* a broker from its ``open``, ``resumed`` or ``gap`` until its connection
  ends. A refusal (or a session closed before it was told) sends it to the next broker at
  once; after a round of refusals it draws another delay; after ``ATTEMPTS`` rounds it stays
  away (``never_back``). After :meth:`RollingGroup.settle` nothing is followed or counted.
- A :class:`loadtest.method.timeline.Timeline` counts per second the sessions each broker took
  and lost and every delivery's lateness.
- A :class:`RollingSubscriber` keeps when it first delivered each number: one never delivered
  is lost. A number beyond the next with no ``gap`` told since is a silent gap. After a gap
  in a new epoch the numbers start over.
"""

import array
import asyncio
import collections
import functools
import random

from loadtest.client.storm_clients import ATTEMPTS, CONNECT_TIMEOUT_S, StormGroup, StormSubscriber
from loadtest.framing.resuming import GAP
from loadtest.method.timeline import Timeline

MASK_64 = (1 << 64) - 1
# Seconds a refused first connection waits, at most, before it is tried again.
FIRST_BACKOFF_S = 1.0


def reconnect_order(client_id, lost, brokers):
    """The brokers client ``client_id`` tries, in turn, when it loses broker ``lost``: the others, from one
    drawn from both numbers, then ``lost`` itself."""
    others = brokers - 1
    if others < 1:
        return [lost]
    first = draw(client_id, lost) % others
    return [(lost + 1 + (first + step) % others) % brokers for step in range(others)] + [lost]


def draw(client_id, lost):
    """A 64-bit number that looks random, the same for the same two numbers (SplitMix64's
    finalizer): where a client goes after one loss says nothing of where it goes after another."""
    x = ((client_id << 16) + lost + 1) * 0x9E3779B97F4A7C15 & MASK_64
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & MASK_64
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & MASK_64
    return x ^ (x >> 31)


class RollingSubscriber(StormSubscriber):
    """A StormSubscriber that keeps ``first_us[n]``, when it first delivered ``n`` (0: never), and ``silent`` gaps."""

    def __init__(self):
        super().__init__()
        self.first_us = array.array("q")
        self.silent = 0
        self._told = False

    def receive(self, envelope):
        if isinstance(envelope, dict) and envelope.get("c") == GAP:
            self._told = True
            if envelope.get("epoch") != self.epoch:
                self.last = None
        return super().receive(envelope)

    def delivered(self, offset, message):
        before, numbered = self.last, self.numbered
        super().delivered(offset, message)
        if self.numbered == numbered:
            return
        number = self.last
        if number > (before or 0) + 1 and not self._told:
            self.silent += 1
        self._told = False
        if number >= len(self.first_us):
            self.first_us.extend([0] * (number + 1 - len(self.first_us)))
        self.first_us[number] = self.first_us[number] or self.last_us

    def lost(self, last):
        """How many of the numbers 1 to ``last`` it never delivered."""
        delivered = self.first_us[1:last + 1]
        return last - len(delivered) + delivered.count(0)


class RollingGroup(StormGroup):
    """A StormGroup following the cluster; ``on``: the broker each subscriber is on, ``ends``: why connections ended."""

    COMMANDS = StormGroup.COMMANDS + ("follow", "settle")
    SUBSCRIBER = RollingSubscriber

    def __init__(self, spec):
        super().__init__(spec)
        self.timeline = Timeline()
        self.histogram = self.timeline
        self.on = [None] * spec.count
        self.cut = [False] * spec.count
        self.ends = collections.Counter()
        self.never_back = 0
        self.backoff = None
        self.first_failures = {}
        self._returns = set()

    async def connect(self):
        """Open every subscriber's first connection: the failures, if any subscriber is still away."""
        await super().connect()
        away = [index for index, connection in enumerate(self.connections) if connection is None]
        back = await asyncio.gather(*(self._open_within(index, FIRST_BACKOFF_S) for index in away))
        self.first_failures = dict(self.failures)
        return self.first_failures if not all(back) else {}

    async def _open(self, index, broker=None):
        """Connect subscriber ``index`` to ``broker`` and wait until it is told where it starts: True if on it."""
        broker = self.home(index) if broker is None else broker
        subscriber = self.subscribers[index]
        starts = subscriber.starts
        if not await super()._open(index, broker):
            return False
        connection = self.connections[index]
        if subscriber.starts == starts and connection.alive:
            told = asyncio.get_running_loop().create_future()
            subscriber.on_start = connection.on_end = lambda *_: told.done() or told.set_result(None)
            try:
                await asyncio.wait_for(told, CONNECT_TIMEOUT_S)
            except asyncio.TimeoutError:
                pass
            finally:
                subscriber.on_start = connection.on_end = None
        if subscriber.starts == starts:
            reason = connection.closed_reason or "not told where it starts within %g s" % CONNECT_TIMEOUT_S
            connection.close()
            self.connections[index] = None
            self.failures["closed as it opened: %s" % reason] += 1
            return False
        self.on[index] = broker
        self.timeline.open(broker)
        if connection.alive:
            connection.on_end = functools.partial(self._ended, index, broker, connection)
        else:
            self._ended(index, broker, connection, connection.closed_reason)
        return True

    def recorder(self, index):
        return self.timeline if self.cut[index] else self.timeline.uncut_clients

    def _ended(self, index, broker, connection, reason):
        self.timeline.end(broker)
        self.cut[index] = True
        self.ends[reason] += 1
        if self.connections[index] is connection:
            self.connections[index] = None
            self.on[index] = None
        if self.backoff is not None:
            returning = asyncio.ensure_future(self._come_back(index, broker))
            self._returns.add(returning)
            returning.add_done_callback(self._returns.discard)

    async def _come_back(self, index, lost):
        order = reconnect_order(self.first_id + index, lost, len(self.urls))
        for _ in range(ATTEMPTS):
            await asyncio.sleep(random.uniform(0, self.backoff))
            for broker in order:
                if self.backoff is None:
                    return
                if await self._open(index, broker):
                    return
        self.never_back += 1

    def follow(self, origin, backoff):
        """Count seconds from ``origin`` and bring back every subscriber whose connection ends from now on."""
        self.timeline.start(origin)
        self.failures.clear()
        self.backoff = backoff

    def settle(self):
        """Follow no more: what ends from now on stays ended, uncounted."""
        self.backoff = None
        for connection in self.connections:
            if connection is not None:
                connection.on_end = None
        for returning in list(self._returns):
            returning.cancel()

    def report(self, last, target=None, since_us=None):
        """:meth:`StormGroup.counts`, the rolling figures, each subscriber's ms from ``since_us`` to ``target``."""
        report = self.counts(last)
        subscribers = self.subscribers
        delivered = [s.first_us[target] for s in subscribers if target is not None and target < len(s.first_us)]
        report.update(timeline=self.timeline.report(), ends=dict(self.ends), failures=dict(self.failures),
                      never_back=self.never_back, first_failures=self.first_failures,
                      missing=sum(s.lost(last) for s in subscribers), silent=sum(s.silent for s in subscribers),
                      catch_up_ms=[round((at - since_us) / 1000.0, 1) for at in delivered if at])
        return report

    def close(self):
        self.settle()
        super().close()
