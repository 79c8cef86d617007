"""SockJS heartbeats at ``--heartbeat-delay``, from the broker's heartbeat wheel:
one ``h`` frame per delay on every SockJS transport, not two; a session is a
member of the wheel only while a request of it is attached."""

import time

import pytest

from sockjs_clients import EventSourceClient, HtmlFileClient, JsonpClient, WebSocketClient, XhrPollingClient, XhrStreamingClient


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
