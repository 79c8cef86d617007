"""A reconnect storm's clients: resuming subscribers, all dropped at once, back with their positions.

Rules:

- A :class:`StormSubscriber` checks the feed's numbered messages: each delivered must follow
  the last (else a hole); it times each delivery (not a copy it drops).
- Connections are the load client's own, counting with the subscriber's ``count_frame``:
  every transport works.
- :meth:`StormGroup.drop` aborts every connection in one loop iteration; :meth:`StormGroup.come_back`
  brings each back after a draw in ``[0, backoff]``, resuming, ``ATTEMPTS`` times at most.
  Every wait is bounded. A group runs in a worker process."""

import asyncio
import collections
import dataclasses
import random

from loadtest.client import tls_context
from loadtest.client.connections import CONNECTING_AT_ONCE, ClientGroup
from loadtest.client.deliveries import failure_reason, now_us
from loadtest.client.workers import summed
from loadtest.errors import ConnectError
from loadtest.framing import endpoints
from loadtest.framing.resuming import ResumingSubscriber
from loadtest.method import rules
from loadtest.method.rules import End
from loadtest.results import console

CONNECT_TIMEOUT_S = 10.0
ATTEMPTS = 5
POLL_S = 0.05


class StormSubscriber(ResumingSubscriber):
    """One subscriber of the storm: ``first`` and ``last`` numbers delivered, ``numbered`` (the feed's
    messages delivered), ``repeats`` (of them, at or before the last), ``foreign`` (not the feed's);
    ``record``: what each delivery's lateness goes to."""

    def __init__(self):
        super().__init__()
        self.first = None
        self.last = None
        self.holes = 0
        self.numbered = 0
        self.repeats = 0
        self.foreign = 0
        self.back_us = None
        self.caught_up_us = None
        self.last_us = None
        self.record = None

    def delivered(self, offset, message):
        try:
            _, number, sent_us = message.split(":")
            number, sent_us = int(number), int(sent_us)
        except (AttributeError, ValueError):
            self.foreign += 1
            return
        self.numbered += 1
        now = now_us()
        self.record(max(1, now - sent_us))
        if self.last is not None and number != self.last + 1:
            self.holes += 1
            self.repeats += number <= self.last
        if self.first is None:
            self.first = number
        self.last = number
        self.last_us = now
        if self.back_us is not None and self.caught_up_us is None and sent_us >= self.back_us:
            self.caught_up_us = now

    def caught_up_at(self, last):
        """When it delivered the first message published after it came back (or ``last``, back after it), or None."""
        if self.caught_up_us is not None:
            return self.caught_up_us
        return self.last_us if self.back_us is not None and self.last == last else None


class StormGroup:
    """The subscribers of a :class:`loadtest.client.connections.GroupSpec`, to its ``urls`` in turn."""

    COMMANDS = ("connect", "drop", "come_back", "wait_for", "report")
    SUBSCRIBER = StormSubscriber

    def __init__(self, spec):
        self.spec = spec
        self._clients = ClientGroup(dataclasses.replace(spec, listen=True))
        self.urls = list(spec.urls)
        self.first_id = spec.first_id
        self.subscribers = [self.SUBSCRIBER() for _ in range(spec.count)]
        self.connections = [None] * spec.count
        self.failures = collections.Counter()
        self.histogram = rules.new_histogram()
        self.dropped_us = None

    def recorder(self, index):
        """What subscriber ``index``'s next connection records each delivery's lateness into."""
        return self.histogram

    def home(self, index):
        """The broker subscriber ``index`` connects to first: the brokers take the ids in turn."""
        return (self.first_id + index) % len(self.urls)

    async def _open(self, index, broker=None):
        """Connect subscriber ``index`` to ``broker`` (default :meth:`home`): True if open."""
        client_id = self.first_id + index
        base = self.urls[self.home(index) if broker is None else broker]
        url = endpoints.with_query(base, self.subscribers[index].query())
        service = endpoints.target(url)
        connection = self._clients.new_connection(client_id, url)
        subscriber = self.subscribers[index]
        connection.histogram = self.recorder(index)
        subscriber.record = connection.histogram.record_value
        connection.protocol.count_messages = subscriber.count_frame
        connection.protocol.marker = None  # the subscriber times what it delivers
        local = self.spec.source_address(client_id)
        try:
            await connection.open(service.host, service.port, local, CONNECT_TIMEOUT_S,
                                  tls_context.context_for(service))
        except (OSError, asyncio.TimeoutError, ConnectError) as exc:
            connection.close()
            self.failures[failure_reason(exc)] += 1
            return False
        self.connections[index] = connection
        return True

    async def connect(self):
        """Open every subscriber's first connection, ``CONNECTING_AT_ONCE`` at a time; the failures."""
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)

        async def one(index):
            async with gate:
                await self._open(index)

        await asyncio.gather(*(one(i) for i in range(len(self.subscribers))))
        return dict(self.failures)

    def drop(self):
        """Abort every connection now; when, in microseconds of the monotonic clock."""
        for connection in self.connections:
            if connection is not None:
                connection.close("dropped")
        self.connections = [None] * len(self.connections)
        self.dropped_us = now_us()
        return self.dropped_us

    async def come_back(self, backoff):
        """Reconnect every subscriber (:meth:`_open_within`): ``{reason: count}`` of every attempt that failed."""
        self.failures.clear()
        await asyncio.gather(*(self._open_within(i, backoff) for i in range(len(self.subscribers))))
        return dict(self.failures)

    async def _open_within(self, index, backoff):
        """Open subscriber ``index`` after a draw in ``[0, backoff]`` s, again on failure, ``ATTEMPTS`` at most."""
        for _ in range(ATTEMPTS):
            await asyncio.sleep(random.uniform(0, backoff))
            self.subscribers[index].back_us = now_us()
            if await self._open(index):
                return True
        return False

    async def wait_for(self, last, timeout):
        """Until every subscriber has delivered message ``last``, or ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline and any(s.last is None or s.last < last for s in self.subscribers):
            await asyncio.sleep(POLL_S)

    def report(self, last):
        """What the subscribers ended with, summed (:meth:`counts`), and the histogram of deliveries."""
        report = self.counts(last)
        report["histogram"] = self.histogram.encode()
        return report

    def counts(self, last):
        """What the subscribers ended with, summed, and each one's catch-up time after the drop (ms)."""
        subscribers = self.subscribers
        gaps = collections.Counter()
        for subscriber in subscribers:
            gaps.update(subscriber.gaps)
        caught_up = [round((at - self.dropped_us) / 1000.0, 1) for at in (s.caught_up_at(last) for s in subscribers)
                     if at is not None and self.dropped_us is not None]
        return {
            "clients": len(subscribers),
            "connected": sum(1 for connection in self.connections if connection is not None and connection.alive),
            "complete": sum(1 for s in subscribers if s.first == 1 and s.last == last and not s.holes
                            and not s.duplicates and not sum(s.gaps.values())),
            "holes": sum(s.holes for s in subscribers),
            "duplicates": sum(s.duplicates for s in subscribers),
            "replayed": sum(s.replayed for s in subscribers),
            "foreign": sum(s.foreign for s in subscribers),
            "gaps": dict(gaps),
            "not_caught_up": len(subscribers) - len(caught_up),
            "caught_up_ms": caught_up,
            "missing": sum(max(0, last - (s.numbered - s.repeats)) for s in subscribers),
            "repeated": sum(s.repeats for s in subscribers),
        }

    def close(self):
        for connection in self.connections:
            if connection is not None:
                connection.close()
        self._clients.close()


async def connect_all(groups):
    """Connect every group's subscribers at once: None, or the run's end (``connections failed: 2 refused``)."""
    failures = summed(await asyncio.gather(*(group.connect() for group in groups)))
    return End.CONNECTIONS_FAILED.text(console.listed(failures)) if failures else None
