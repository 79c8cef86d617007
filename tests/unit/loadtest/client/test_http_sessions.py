"""The churn's HTTP: response heads and bodies without sockets, SockJS sessions against a real broker."""

import asyncio

import pytest

from loadtest.client import http_sessions


def read(data, **headers):
    """The pieces a :class:`http_sessions.Body` with ``headers`` reads from ``data``, then the end of the stream."""

    async def pieces():
        reader = asyncio.StreamReader()
        reader.feed_data(data)
        reader.feed_eof()
        body = http_sessions.Body(reader, headers)
        found = []
        while True:
            piece = await body.piece()
            if not piece:
                return found
            found.append(piece)

    return asyncio.run(pieces())


def test_a_body_is_read_chunked_by_length_or_to_the_close():
    chunked = read(b"3\r\nh\no\r\n2;x=1\r\no\n\r\n0\r\n\r\n", **{"transfer-encoding": "chunked"})
    assert chunked == [b"h\no", b"o\n"]
    assert read(b"o\nextra", **{"content-length": "2"}) == [b"o\n"]
    assert read(b"o\n") == [b"o\n"]


@pytest.mark.parametrize("data, headers, message", [
    (b"5\r\nab", {"transfer-encoding": "chunked"}, "closed inside the response"),
    (b"zz\r\n", {"transfer-encoding": "chunked"}, "malformed chunk size"),
    (b"", {"transfer-encoding": "chunked"}, "closed inside the response"),
    (b"o\n", {"content-length": str(http_sessions.MAX_BODY_BYTES + 1)}, "a body over"),
])
def test_a_broken_body_is_an_http_error(data, headers, message):
    with pytest.raises(http_sessions.HTTPError, match=message):
        read(data, **headers)
