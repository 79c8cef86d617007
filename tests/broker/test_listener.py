"""The listener's streams and their request timers, on real socket pairs: a
connection its client closed is let go at once, not held until its deadline;
a burst of new connections is served a few at a loop turn; a connection given
back mid-head keeps its deadline."""

import asyncio
import contextlib
import socket
import time
import types

import pytest
from tornado.iostream import StreamClosedError

from broker.core.limits import Limits
from broker.transports.listener import SERVED_PER_TURN, CountedStream, Handover, Listener, Peer
from broker.transports.request_timeouts import RequestTimeouts

HEADERS_END = b"\r?\n\r?\n"


def test_a_connection_closed_between_requests_is_not_held_by_the_header_timer():
    async def scenario():
        ours, theirs = socket.socketpair()
        limits = Limits(10)
        assert limits.admit("client") is None
        timeouts = RequestTimeouts(header_timeout=20.0, body_timeout=20.0)
        stream = CountedStream(ours, limits, "client", Peer(("127.0.0.1", 40000), "127.0.0.1"), timeouts=timeouts)
        first = stream.read_until_regex(HEADERS_END, 65536)
        assert list(timeouts.headers) == [stream]
        theirs.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        await first
        assert not timeouts.headers
        # The next request's headers: the client closes instead.
        second = stream.read_until_regex(HEADERS_END, 65536)
        theirs.close()
        with pytest.raises(StreamClosedError):
            await second
        assert stream.closed() and not timeouts.headers and limits.open == 0
        # Tornado's HTTP server may start one more read on the closed stream.
        with pytest.raises(StreamClosedError):
            stream.read_until_regex(HEADERS_END, 65536)
        assert not timeouts.headers and not timeouts.bodies
        with pytest.raises(StreamClosedError):
            stream.read_bytes(10)
        assert not timeouts.bodies

    asyncio.run(scenario())


class Server:
    """The HTTP server's side of a listener: the streams it is handed."""

    max_buffer_size = 1 << 20
    read_chunk_size = 65536

    def __init__(self):
        self.streams = []
        self.conn_params = types.SimpleNamespace()

    def handle_stream(self, stream, address):
        self.streams.append(stream)


@contextlib.asynccontextmanager
async def new_connections(limits, count):
    """A listener within ``limits`` that has just taken ``count`` new
    connections in one go: the server it hands them to, and their sockets."""
    server = Server()
    listener = Listener(server, limits)
    pairs = [socket.socketpair() for _ in range(count)]
    try:
        for ours, _ in pairs:
            listener.take(ours, ("127.0.0.1", 40000))
        yield server, [ours for ours, _ in pairs]
    finally:
        for stream in server.streams:
            stream.close()
        for pair in pairs:
            for sock in pair:
                sock.close()


def test_under_an_accept_rate_a_burst_of_new_connections_is_served_a_few_at_a_loop_turn():
    async def scenario():
        limits = Limits(100, accept_rate=500)
        async with new_connections(limits, 2 * SERVED_PER_TURN + 3) as (server, sockets):
            assert limits.open == len(sockets) and not server.streams
            served = []
            while len(server.streams) < len(sockets):
                await asyncio.sleep(0)  # one loop turn
                served.append(len(server.streams))
            assert served == [*range(SERVED_PER_TURN, len(sockets), SERVED_PER_TURN), len(sockets)]
            assert [stream.socket for stream in server.streams] == sockets
        assert limits.open == 0

    asyncio.run(scenario())


def test_without_an_accept_rate_each_new_connection_is_served_at_once():
    async def scenario():
        async with new_connections(Limits(100), SERVED_PER_TURN + 3) as (server, sockets):
            assert len(server.streams) == len(sockets)

    asyncio.run(scenario())


def test_a_connection_given_back_mid_head_keeps_its_head_deadline():
    """A kept connection that gives the HTTP server a request whose head is not whole yet gives
    it the head's deadline too: a head trickled in from near the end of the header timeout is
    not timed anew."""
    async def scenario():
        server = Server()
        limits = Limits(10)
        timeouts = RequestTimeouts(header_timeout=20.0, body_timeout=20.0)
        listener = Listener(server, limits, timeouts=timeouts)
        pairs = [socket.socketpair() for _ in range(2)]
        try:
            for (ours, _), deadline in zip(pairs, (5.0, None)):
                assert limits.admit("client") is None
                Handover(listener, Peer(("127.0.0.1", 40000), "client"), "client").serve_again(ours, deadline)
            carried, fresh = server.streams
            head = carried.read_until_regex(HEADERS_END, 65536)  # as the HTTP server reads a request
            fresh.read_until_regex(HEADERS_END, 65536)
            assert timeouts.deadline(carried) == 5.0
            assert timeouts.deadline(fresh) > time.monotonic() + 19, "without a deadline: timed from its first read"
            timeouts.sweep(4.9)
            assert not carried.closed()
            timeouts.sweep(5.1)
            assert carried.closed() and not fresh.closed() and limits.open == 1
            with pytest.raises(StreamClosedError):
                await head
            assert timeouts.deadline(carried) is None
            fresh.close()
        finally:
            for pair in pairs:
                for sock in pair:
                    sock.close()

    asyncio.run(scenario())
