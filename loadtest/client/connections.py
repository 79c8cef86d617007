"""Load clients on one asyncio loop: connect, publish, count, time round trips.

Rules:

- A :class:`Connection` (a websocket; :class:`loadtest.client.http_connections.HttpConnection`
  over HTTP) only moves bytes between its socket and a sans-I/O protocol and acts on the
  events it returns. Every connection of a loop reads into one shared buffer.
- A :class:`ClientGroup`, built from a :class:`GroupSpec`, is what one process runs. It opens
  at most ``CONNECTING_AT_ONCE`` at a time, client ``i`` to ``urls[i % n]`` over its transport
  or its share of a mix.
- :meth:`ClientGroup.run_step` sends its share of a step round-robin, paced evenly, and
  waits for every group's messages back, by :mod:`loadtest.method.rules`'s rules.
- Listeners (``listen``) send nothing; their delivery times go into a :class:`LatencyLog`
  (an append each) and into a histogram only when sampled."""

import array
import asyncio
import collections
import dataclasses
import os
from typing import Tuple

from loadtest import records
from loadtest.client import http_connections, tls_context
from loadtest.client.deliveries import ClientConnection, failure_reason, now_us
from loadtest.client.loop_lag import LagMonitor
from loadtest.errors import ConnectError
from loadtest.framing import endpoints
from loadtest.framing.websocket_protocol import OPENED, ClientProtocol, Delivered
from loadtest.framing.http_transport_protocol import HttpSessionProtocol
from loadtest.method import rules

CONNECT_TIMEOUT_S = 10.0
CONNECTING_AT_ONCE = 50
TICK_S = 0.005
LOSS_CHECK_S = 0.25
READ_BUFFER_BYTES = 256 * 1024


class LatencyLog(array.array):
    """Delivery times in microseconds, as they come, with a histogram's ``record_value``."""

    record_value = array.array.append


class Connection(ClientConnection, asyncio.BufferedProtocol):
    """One websocket client on the loop: a socket, its :class:`ClientProtocol`, its counters. It reads
    into ``read_buffer``, shared by the loop's connections: a plain Protocol would get a fresh 256 KiB
    bytes object per read, which costs more than everything else per message."""

    def __init__(self, protocol, histogram, read_buffer):
        super().__init__(protocol, histogram)
        self.local_address = None
        self._transport = None
        self._read_view = memoryview(read_buffer)

    async def open(self, host, port, local, timeout, ssl_context=None):
        """Connect to ``host``:``port`` from ``local``, over TLS with ``ssl_context``; returns once open."""
        loop = asyncio.get_event_loop()
        await asyncio.wait_for(loop.create_connection(lambda: self, host, port, local_addr=local, ssl=ssl_context),
                               timeout)
        await asyncio.wait_for(asyncio.shield(self.opened), timeout)

    def connection_made(self, transport):
        self._transport = transport
        self.local_address = transport.get_extra_info("sockname")
        transport.write(self.protocol.data_to_send())

    def connection_lost(self, exc):
        self._closed(self.protocol.close(failure_reason(exc) if exc else "closed by the server").reason)

    def get_buffer(self, sizehint):
        return self._read_view

    def buffer_updated(self, nbytes):
        protocol = self.protocol
        for event in protocol.receive_data(bytes(self._read_view[:nbytes])):
            if type(event) is Delivered:
                self.received += event.count
                if event.own:
                    self._record(event.own)
            elif event is OPENED:
                self._open()
            else:
                self._closed(event.reason)
                self._transport.abort()
                return
        if protocol.outgoing:
            self._transport.write(protocol.data_to_send())

    def send(self):
        """Publish this client's next message now; returns ``(seq, sent_us)``."""
        sent_us = now_us()
        seq = self.protocol.send(sent_us)
        self._transport.write(self.protocol.data_to_send())
        return seq, sent_us

    def close(self, reason="closed by the client"):
        self._closed(self.protocol.close(reason).reason)
        if self._transport is not None:
            self._transport.abort()


@dataclasses.dataclass(frozen=True)
class GroupSpec:
    """A group of clients: ``count`` of them, numbered from ``first_id``, bound to ``source_addresses`` in
    turn; ``listen``: they send nothing and time the feed's messages."""

    urls: Tuple[str, ...]
    transport: str = endpoints.WEBSOCKET
    source_addresses: Tuple[str, ...] = ()
    first_id: int = 0
    count: int = 0
    listen: bool = False

    def __post_init__(self):
        if isinstance(self.urls, str):
            raise TypeError("urls is a sequence of SockJS prefixes, not one string: %r" % self.urls)
        object.__setattr__(self, "urls", tuple(self.urls))
        object.__setattr__(self, "source_addresses", tuple(self.source_addresses or ()))

    def source_address(self, client_id):
        return endpoints.source_address(self.source_addresses, client_id)

    def spread(self, procs):
        """These clients in up to ``procs`` specs, as even as they go, ids running on; none empty (a worker
        with no connection would end every step at once)."""
        shares = [self.count // procs + (1 if i < self.count % procs else 0) for i in range(min(procs, self.count))]
        return [dataclasses.replace(self, first_id=self.first_id + sum(shares[:i]), count=share)
                for i, share in enumerate(shares)]


class ClientGroup:
    """The connections one process opens for a :class:`GroupSpec`; ``COMMANDS``: what a worker may be asked of it."""

    COMMANDS = ("connect", "alive_count", "begin_step", "run_step", "take_sample")

    def __init__(self, spec):
        self.spec = spec
        self.urls = list(spec.urls)
        self.transport = records.transport_name(spec.transport)
        self.listen = spec.listen
        self.next_id = spec.first_id
        self.connections = []
        self.histogram = LatencyLog("q") if self.listen else rules.new_histogram()
        self.lag = LagMonitor()
        self._read_buffer = bytearray(READ_BUFFER_BYTES)
        self._sampled_cpu_s = _cpu_seconds()

    async def connect(self, count, on_progress=None, timeout=CONNECT_TIMEOUT_S):
        """Open ``count`` more connections, ``CONNECTING_AT_ONCE`` at a time: ``{reason: number}`` of the
        failures. After ``CONNECTING_AT_ONCE`` failures the rest are "not attempted": a dead server is not hammered."""
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
        failures = collections.Counter()
        opened = [0]

        async def open_one(client_id):
            async with gate:
                if sum(failures.values()) >= CONNECTING_AT_ONCE:
                    failures["not attempted"] += 1
                    return
                url = self.urls[client_id % len(self.urls)]
                service = endpoints.target(url)
                conn = self.new_connection(client_id, url)
                local = self.spec.source_address(client_id)
                try:
                    await conn.open(service.host, service.port, local, timeout, tls_context.context_for(service))
                except (OSError, asyncio.TimeoutError, ConnectError) as exc:
                    conn.close()
                    failures[failure_reason(exc)] += 1
                    return
                self.connections.append(conn)
                opened[0] += 1
                if on_progress is not None:
                    on_progress(opened[0])

        ids = list(range(self.next_id, self.next_id + count))
        self.next_id += count
        await asyncio.gather(*(open_one(i) for i in ids))
        return dict(failures)

    def new_connection(self, client_id, url):
        """A new connection of client ``client_id`` to ``url``, over its transport, not yet open."""
        transport = endpoints.client_transport(self.transport, client_id)
        service = endpoints.target(url)
        host = service.netloc
        if transport in endpoints.HTTP_TRANSPORTS:
            session = endpoints.session_path(url)
            args = (host, session, transport, service.query, service.positions)
            protocol = HttpSessionProtocol.listener(*args) if self.listen else HttpSessionProtocol(client_id, *args)
            return http_connections.HttpConnection(protocol, self.histogram, self._read_buffer)
        path, sockjs = endpoints.endpoint_path(url, transport), transport != endpoints.RAW
        protocol = (ClientProtocol.listener(host, path, sockjs, service.positions) if self.listen
                    else ClientProtocol(client_id, host, path, sockjs, service.positions))
        return Connection(protocol, self.histogram, self._read_buffer)

    def alive(self):
        return [conn for conn in self.connections if conn.alive]

    def alive_count(self):
        return len(self.alive())

    async def begin_step(self):
        """Count deliveries and round trips from now on: in every group before any sends."""
        self.histogram = rules.new_histogram()
        for conn in self.connections:
            conn.histogram = self.histogram
            conn.received = 0
            conn.protocol.pending.clear()

    async def run_step(self, to_send, duration, total_messages):
        """Send ``to_send`` messages round-robin, evenly over ``duration`` s, then wait until they and
        ``total_messages`` (every group's) are back: this group's :class:`loadtest.method.rules.Partial`."""
        loop = asyncio.get_event_loop()
        rate = to_send / duration
        connections = self.alive()
        protocols = [conn.protocol for conn in connections]
        self.lag.reset()
        reopened_before = sum(conn.reopened for conn in connections)
        cpu_before = _cpu_seconds()
        started = loop.time()
        sent_log = collections.deque()
        sent = 0
        index = 0
        end = None if connections else rules.End.ALL_LOST
        last_loss_check = started
        send_until = started + duration
        while end is None:
            await asyncio.sleep(TICK_S)
            now = loop.time()
            if now >= send_until and sent >= to_send:
                break
            due = rules.messages_due(now - started, rate, to_send)
            while sent < due:
                conn = connections[index % len(connections)]
                index += 1
                if conn.alive:
                    seq, sent_us = conn.send()
                    sent_log.append((sent_us, conn.protocol, seq))
                    sent += 1
                elif not any(c.alive for c in connections):
                    break
            if now - last_loss_check > LOSS_CHECK_S:
                last_loss_check = now
                end = rules.step_end(protocols, sent_log, now_us())
        send_ended = loop.time()
        live = [conn for conn in connections if conn.alive]
        expected = total_messages * len(live)
        deadline = send_ended + rules.LOSS_AFTER_S
        while loop.time() < deadline and end is None:
            if all(not conn.protocol.pending for conn in live) and sum(c.received for c in live) >= expected:
                break
            await asyncio.sleep(TICK_S)
        ended = loop.time()
        lost = rules.lost_messages(sent_log, now_us() - int(rules.LOSS_AFTER_S * 1e6) + 1000)
        for protocol in protocols:
            protocol.pending.clear()
        dropped = [conn.closed_reason for conn in connections if not conn.alive]
        return rules.Partial(
            duration_s=ended - started, sent=sent, received=sum(conn.received for conn in connections), lost=lost,
            dropped=len(dropped), reopened=sum(conn.reopened for conn in connections) - reopened_before,
            drop_reasons=dict(collections.Counter(dropped)), histogram=self.histogram,
            cpu_s=_cpu_seconds() - cpu_before, loop_lag_ms=self.lag.summary_ms(), end=end)

    async def take_sample(self, expected=None):
        """What a group of listeners had since the last sample: a :class:`loadtest.method.rules.FeedPartial`;
        connections alive with fewer than ``expected`` messages (the feed's total) are ``short``, more ``extra``."""
        delays, self.histogram = self.histogram, LatencyLog("q")
        histogram = rules.new_histogram()
        for delay in delays:
            histogram.record_value(delay)
        cpu_s, self._sampled_cpu_s = self._sampled_cpu_s, _cpu_seconds()
        received = short = extra = 0
        dropped = collections.Counter()
        for conn in self.connections:
            conn.histogram = self.histogram
            received += conn.received - conn.sampled
            conn.sampled = conn.received
            if not conn.alive:
                dropped[conn.closed_reason] += 1
            elif expected is not None:
                short += max(0, expected - conn.received)
                extra += max(0, conn.received - expected)
        return rules.FeedPartial(received=received, histogram=histogram, alive=len(self.connections) - sum(
            dropped.values()), drop_reasons=dict(dropped), short=short, extra=extra,
            cpu_s=self._sampled_cpu_s - cpu_s)

    def close(self):
        for conn in self.connections:
            conn.close()
        self.connections = []
        self.lag.stop()


def _cpu_seconds():
    times = os.times()
    return times.user + times.system
