"""Websocket load clients on one asyncio loop: connect, publish, count, time round trips.

A :class:`ClientGroup` is the unit one process runs. :meth:`ClientGroup.run_step`
sends its share of one step's messages and returns a partial step (counters, an
HDR histogram of round trips, CPU and loop lag) that :mod:`loadtest.sweep` merges.
"""

import asyncio
import collections
import errno
import os
import random
import string
import time
import urllib.parse

from hdrh.histogram import HdrHistogram

from loadtest import payload, websocket

LOSS_AFTER_S = 5.0
CONNECT_TIMEOUT_S = 10.0
CONNECTING_AT_ONCE = 50
TICK_S = 0.005
READ_BUFFER_BYTES = 256 * 1024
LAG_SAMPLE_S = 0.01
RTT_HIGHEST_US = 60 * 1000 * 1000


def new_histogram():
    """Round trips in microseconds, 1 us to 60 s, 3 significant digits."""
    return HdrHistogram(1, RTT_HIGHEST_US, 3)


def now_us():
    return int(time.monotonic() * 1e6)


class ConnectError(Exception):
    """Opening a connection failed; ``reason`` is short and human readable."""

    def __init__(self, reason):
        super().__init__(reason)
        self.reason = reason


def failure_reason(exc):
    """A short reason for a failed connection attempt, never a traceback."""
    if isinstance(exc, ConnectError):
        return exc.reason
    if isinstance(exc, asyncio.TimeoutError):
        return "timeout"
    if isinstance(exc, ConnectionRefusedError):
        return "refused"
    if isinstance(exc, websocket.ProtocolError):
        return str(exc)
    if isinstance(exc, OSError):
        if exc.errno in (errno.EMFILE, errno.ENFILE):
            return "too many open files"
        if exc.errno == errno.EADDRNOTAVAIL:
            return "no free local port (add --source-addresses)"
        if exc.errno in (errno.ECONNRESET, errno.EPIPE):
            return "reset by the server"
        return exc.strerror or str(exc)
    return "%s: %s" % (type(exc).__name__, exc)


def session_path(url):
    """A new session's path ``<prefix>/<server>/<session>`` under the SockJS prefix ``url``."""
    prefix = urllib.parse.urlsplit(url).path.rstrip("/")
    server = "%03d" % random.randrange(1000)
    session = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(12))
    return "%s/%s/%s" % (prefix, server, session)


def endpoint_path(url, transport):
    """The websocket path for ``transport`` (``sockjs`` or ``raw``) under the SockJS prefix ``url``."""
    if transport == "raw":
        return urllib.parse.urlsplit(url).path.rstrip("/") + "/websocket"
    return session_path(url) + "/websocket"


class Connection(asyncio.BufferedProtocol):
    """One websocket client: counts every message delivered, times its own.

    It reads into ``read_buffer``, one bytearray shared by all connections of a
    loop: a plain Protocol would get a freshly allocated 256 KiB bytes object per
    read, which costs more than everything else per message.
    """

    def __init__(self, client_id, host, path, sockjs, histogram, read_buffer):
        self.client_id = client_id
        self.sockjs = sockjs
        self.marker = payload.sockjs_marker(client_id) if sockjs else payload.raw_marker(client_id)
        self.histogram = histogram
        self.received = 0
        self.pending = {}
        self.seq = 0
        self.closed_reason = None
        self._host = host
        self._path = path
        self._key = websocket.new_key()
        self._transport = None
        self.local_address = None
        self._handshaken = False
        self._buffer = b""
        self._fragments = None
        self._read_view = memoryview(read_buffer)
        self.opened = asyncio.get_event_loop().create_future()

    def connection_made(self, transport):
        self._transport = transport
        self.local_address = transport.get_extra_info("sockname")
        transport.write(websocket.handshake_request(self._host, self._path, self._key))

    def connection_lost(self, exc):
        if self.closed_reason is None:
            self.closed_reason = failure_reason(exc) if exc else "closed by the server"
        self._fail_open(ConnectError(self.closed_reason))

    def _fail_open(self, exc):
        if not self.opened.done():
            self.opened.set_exception(exc)
            self.opened.exception()  # nobody may be waiting any more

    def close(self, reason="closed by the client"):
        if self.closed_reason is None:
            self.closed_reason = reason
        if self._transport is not None:
            self._transport.abort()

    @property
    def alive(self):
        return self.closed_reason is None

    def send(self):
        """Publish the next message of this client and remember when."""
        self.seq += 1
        sent_us = now_us()
        msg = payload.message(self.client_id, self.seq, sent_us)
        if self.sockjs:
            msg = payload.sockjs_send_payload(msg)
        self.pending[self.seq] = sent_us
        self._transport.write(websocket.client_frame(msg))
        return self.seq, sent_us

    def get_buffer(self, sizehint):
        return self._read_view

    def buffer_updated(self, nbytes):
        data = bytes(self._read_view[:nbytes])
        if self._buffer:
            data = self._buffer + data
        if not self._handshaken:
            head_end = data.find(b"\r\n\r\n")
            if head_end < 0:
                self._buffer = data
                return
            try:
                websocket.check_handshake_response(data[:head_end], self._key)
            except websocket.ProtocolError as exc:
                self._protocol_failure(str(exc))
                return
            self._handshaken = True
            if not self.sockjs:
                self.opened.set_result(None)
            data = data[head_end + 4 :]
        try:
            frames, consumed = websocket.parse_frames(data)
        except websocket.ProtocolError as exc:
            self._protocol_failure(str(exc))
            return
        self._buffer = data[consumed:]
        for opcode, fin, start, end in frames:
            if opcode == websocket.OP_TEXT and fin:
                self._message(data, start, end)
            elif opcode in (websocket.OP_TEXT, websocket.OP_BINARY, websocket.OP_CONTINUATION):
                self._fragment(opcode, fin, data[start:end])
            elif opcode == websocket.OP_PING:
                self._transport.write(websocket.client_frame(data[start:end], websocket.OP_PONG))
            elif opcode == websocket.OP_CLOSE:
                self.close("websocket closed by the server")

    def _fragment(self, opcode, fin, chunk):
        if opcode != websocket.OP_CONTINUATION:
            self._fragments = []
        if self._fragments is None:
            self._protocol_failure("continuation frame without a first fragment")
            return
        self._fragments.append(chunk)
        if fin:
            message = b"".join(self._fragments)
            self._fragments = None
            self._message(message, 0, len(message))

    def _message(self, data, start, end):
        if not self.sockjs:
            self.received += 1
            own = payload.own_raw_message(data, self.marker, start, end)
            if own is not None:
                self._own(*own)
            return
        kind = data[start]
        if kind == payload.SOCKJS_ARRAY:
            self.received += payload.count_sockjs_messages(data, start, end)
            if data.find(self.marker, start, end) >= 0:
                for seq, sent_us in payload.own_messages(data, self.marker, start, end):
                    self._own(seq, sent_us)
        elif kind == payload.SOCKJS_OPEN:
            if not self.opened.done():
                self.opened.set_result(None)
        elif kind == payload.SOCKJS_CLOSE:
            self.close("SockJS close " + payload.sockjs_close_reason(data, start, end))

    def _own(self, seq, sent_us):
        if self.pending.pop(seq, None) is not None:
            self.histogram.record_value(max(1, now_us() - sent_us))

    def _protocol_failure(self, reason):
        self._fail_open(ConnectError(reason))
        self.close(reason)


def parse_source_addresses(text):
    """``"127.0.0.2-127.0.0.9"`` or ``"127.0.0.2,127.0.0.3"`` -> list of addresses."""
    addresses = []
    for part in text.split(","):
        first, _, last = part.strip().partition("-")
        if not last:
            addresses.append(first)
            continue
        head, _, low = first.rpartition(".")
        high = last.rpartition(".")[2]
        addresses.extend("%s.%d" % (head, n) for n in range(int(low), int(high) + 1))
    return addresses


class LagMonitor:
    """How late the loop wakes up a timer that asks for ``LAG_SAMPLE_S``: a busy loop is late."""

    def __init__(self):
        self.reset()
        self._task = asyncio.ensure_future(self._run())

    def reset(self):
        self.total = 0.0
        self.count = 0
        self.max = 0.0

    async def _run(self):
        loop = asyncio.get_event_loop()
        while True:
            before = loop.time()
            await asyncio.sleep(LAG_SAMPLE_S)
            lag = loop.time() - before - LAG_SAMPLE_S
            self.total += lag
            self.count += 1
            if lag > self.max:
                self.max = lag

    def summary_ms(self):
        mean = self.total / self.count if self.count else 0.0
        return {"mean": round(mean * 1000, 3), "max": round(self.max * 1000, 3)}

    def stop(self):
        self._task.cancel()


class ClientGroup:
    """The connections one process opens to ``url``, and the steps it runs with them."""

    def __init__(self, url, transport="sockjs", source_addresses=None, first_id=0):
        parts = urllib.parse.urlsplit(url)
        self.url = url
        self.transport = transport
        self.host = parts.hostname
        self.port = parts.port or 80
        self.source_addresses = source_addresses or []
        self.next_id = first_id
        self.connections = []
        self.histogram = new_histogram()
        self.lag = LagMonitor()
        self._read_buffer = bytearray(READ_BUFFER_BYTES)

    async def connect(self, count, on_progress=None, timeout=CONNECT_TIMEOUT_S):
        """Open ``count`` more connections, at most ``CONNECTING_AT_ONCE`` at a time.

        Returns ``{reason: number}`` for the attempts that failed (empty when all opened).
        After ``CONNECTING_AT_ONCE`` failures the rest are not attempted ("not attempted"),
        so a dead server is not hammered.
        """
        loop = asyncio.get_event_loop()
        gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
        failures = collections.Counter()
        opened = [0]

        async def open_one(client_id):
            async with gate:
                if sum(failures.values()) >= CONNECTING_AT_ONCE:
                    failures["not attempted"] += 1
                    return
                path = endpoint_path(self.url, self.transport)
                conn = Connection(
                    client_id, "%s:%d" % (self.host, self.port), path,
                    self.transport == "sockjs", self.histogram, self._read_buffer,
                )
                local = None
                if self.source_addresses:
                    local = (self.source_addresses[client_id % len(self.source_addresses)], 0)
                try:
                    await asyncio.wait_for(
                        loop.create_connection(lambda: conn, self.host, self.port, local_addr=local),
                        timeout,
                    )
                    await asyncio.wait_for(asyncio.shield(conn.opened), timeout)
                except (OSError, asyncio.TimeoutError, ConnectError, websocket.ProtocolError) as exc:
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

    def alive(self):
        return [conn for conn in self.connections if conn.alive]

    def alive_count(self):
        return len(self.alive())

    async def run_step(self, to_send, duration, total_messages):
        """Send ``to_send`` messages round-robin, evenly over ``duration`` s, then wait until they are back.

        ``total_messages`` is what every group together sends in this step (to know
        how many deliveries to expect).
        """
        loop = asyncio.get_event_loop()
        rate = to_send / duration
        connections = self.alive()
        self.histogram = new_histogram()
        for conn in connections:
            conn.histogram = self.histogram
            conn.received = 0
            conn.pending.clear()
        self.lag.reset()
        cpu_before = _cpu_seconds()
        started = loop.time()
        sent_log = collections.deque()
        sent = 0
        index = 0
        end_reason = None
        last_loss_check = started
        if not connections:
            end_reason = "every connection lost"
        send_until = started + duration
        while not end_reason:
            await asyncio.sleep(TICK_S)
            now = loop.time()
            if now >= send_until and sent >= to_send:
                break
            due = min(to_send, int((now - started) * rate) + 1)
            while sent < due:
                conn = connections[index % len(connections)]
                index += 1
                if conn.alive:
                    seq, sent_us = conn.send()
                    sent_log.append((sent_us, conn, seq))
                    sent += 1
                elif not any(c.alive for c in connections):
                    break
            if now - last_loss_check > 0.25:
                last_loss_check = now
                end_reason = step_end_reason(connections, sent_log)
                if end_reason:
                    break
        send_ended = loop.time()
        live = [conn for conn in connections if conn.alive]
        expected = total_messages * len(live)
        deadline = send_ended + LOSS_AFTER_S
        while loop.time() < deadline and not end_reason:
            if all(not conn.pending for conn in live) and sum(c.received for c in live) >= expected:
                break
            await asyncio.sleep(TICK_S)
        ended = loop.time()
        lost = lost_messages(sent_log, now_us() - int(LOSS_AFTER_S * 1e6) + 1000)
        for conn in connections:
            conn.pending.clear()
        dropped = [conn.closed_reason for conn in connections if not conn.alive]
        return {
            "duration_s": ended - started,
            "sent": sent,
            "received": sum(conn.received for conn in connections),
            "lost": lost,
            "dropped": len(dropped),
            "drop_reasons": dict(collections.Counter(dropped)),
            "histogram": self.histogram,
            "cpu_s": _cpu_seconds() - cpu_before,
            "loop_lag_ms": self.lag.summary_ms(),
            "end_reason": end_reason,
        }

    def close(self):
        for conn in self.connections:
            conn.close()
        self.connections = []
        self.lag.stop()


def step_end_reason(connections, sent_log):
    """Why a step must stop now, or None. Drops answered messages from the head of ``sent_log``."""
    if not any(conn.alive for conn in connections):
        return "every connection lost"
    cutoff = now_us() - int(LOSS_AFTER_S * 1e6)
    while sent_log and sent_log[0][2] not in sent_log[0][1].pending:
        sent_log.popleft()
    if sent_log and sent_log[0][0] < cutoff:
        return "a message not back within %g s" % LOSS_AFTER_S
    return None


def lost_messages(sent_log, cutoff_us):
    """Messages sent before ``cutoff_us`` and still unanswered."""
    return sum(1 for sent_us, conn, seq in sent_log if sent_us < cutoff_us and seq in conn.pending)


def _cpu_seconds():
    times = os.times()
    return times.user + times.system
