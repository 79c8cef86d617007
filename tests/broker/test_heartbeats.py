"""SockJS heartbeats at ``--heartbeat-delay``, from the broker's heartbeat wheel:
one ``h`` frame per delay on every SockJS transport, not two; a session is a
member of the wheel only while a request of it is attached."""

import time
import types

import pytest

from broker.core.heartbeats import HeartbeatWheel
from broker.core.node import Node
from broker.transports.router import BroadcastConnection, BrokerRouter
from sockjs_clients import (EventSourceClient, HtmlFileClient, JsonpClient, WebSocketClient, XhrPollingClient,
                            XhrStreamingClient)

DELAY_S = 0.2
LISTEN_S = 2.0


@pytest.mark.parametrize("client_class", [WebSocketClient, XhrStreamingClient, EventSourceClient, HtmlFileClient,
                                          XhrPollingClient, JsonpClient])
def test_a_quiet_session_gets_one_heartbeat_per_delay(start_broker, client_class):
    broker = start_broker("--heartbeat-delay", str(DELAY_S))
    with client_class(broker.url) as client:
        beats = 0
        deadline = time.monotonic() + LISTEN_S
        while time.monotonic() < deadline:
            assert client.read_frame() == "h"
            beats += 1
    # A late event loop can only make beats fewer; two timers a session would make them twice as many.
    assert LISTEN_S / DELAY_S / 2 <= beats <= LISTEN_S / DELAY_S + 1, beats


def test_a_session_is_in_the_wheel_only_while_a_request_is_attached():
    wheel = HeartbeatWheel(25, buckets=5)
    session = BrokerRouter(BroadcastConnection, "/x", node=Node(heartbeats=wheel)).create_session("s1", register=False)
    sent = []
    # What a session reads of a request's handler as it attaches, and writes to it.
    handler = types.SimpleNamespace(name="xhr_streaming", get_conn_info=lambda: None, send_pack=sent.append)
    assert session.set_handler(handler)
    assert len(wheel) == 1
    session.start_heartbeat()  # the next request of a poll: joins again, not twice
    assert len(wheel) == 1
    for _ in range(5):
        wheel.tick()
    assert sent == ["h"]
    session.remove_handler(handler)
    assert len(wheel) == 0


def test_a_heartbeat_that_finds_no_request_ends_the_membership():
    wheel = HeartbeatWheel(25, buckets=5)
    session = BrokerRouter(BroadcastConnection, "/x", node=Node(heartbeats=wheel)).create_session("s1", register=False)
    session.start_heartbeat()
    assert len(wheel) == 1
    for _ in range(5):
        wheel.tick()
    assert len(wheel) == 0
