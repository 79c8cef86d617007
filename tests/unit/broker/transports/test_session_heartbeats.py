"""SockJS heartbeats at ``--heartbeat-delay``, from the broker's heartbeat wheel:
one ``h`` frame per delay on every SockJS transport, not two; a session is a
member of the wheel only while a request of it is attached."""

import types

from broker.core.heartbeats import HeartbeatWheel
from broker.core.node import Node
from broker.transports.router import BrokerRouter
from broker.transports.subscriber import BroadcastConnection


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
