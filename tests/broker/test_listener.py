"""The listener's streams and their request timers, on a real socket pair: a
connection its client closed is let go at once, not held until its deadline."""

import asyncio
import socket

import pytest
from tornado.iostream import StreamClosedError

from broker.core.limits import Limits
from broker.transports.listener import CountedStream, Peer, RequestTimeouts

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
