"""The churn's HTTP: response heads and bodies without sockets, SockJS sessions against a real broker."""

import asyncio

import pytest

from loadtest.client import http_sessions
from loadtest.framing import http_head


def test_sessions_over_http_open_and_count_in_the_broker(broker):
    async def scenario():
        stream = await http_sessions.open_session(broker.url, "xhr_streaming")
        poll = await http_sessions.open_session(broker.url, "xhr")
        poll.close()
        status, stats = await http_sessions.get_json(broker.url, "/stats")
        stream.close()
        return status, stats

    status, stats = asyncio.run(scenario())
    assert status == 200
    assert stats["connections"] == {"xhr": 1, "xhr_streaming": 1}


def test_a_refused_session_says_why(broker):
    async def scenario():
        await http_sessions.open_session(broker.url.rsplit("/", 1)[0] + "/nothing-here", "xhr")

    with pytest.raises(http_head.HTTPError, match="HTTP 404 on xhr"):
        asyncio.run(scenario())
