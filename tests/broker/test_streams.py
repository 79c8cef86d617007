"""Streaming transports on their own sockets: a body ends at the response
limit and the session goes on in the next one; the client's end closes it.
A polling session nobody polls expires ``--disconnect-delay`` after its last
request."""

import socket

import pytest

from sockjs_clients import STREAMING, Closed, WebSocketClient, XhrPollingClient, closed_with, wait_until

# Past SockJS's response limit (128 KiB; each stream draws its own, from 64 KiB) within the first stream.
MESSAGES = 200
PADDING = "x" * 1000


def receive_reopening(viewer, count):
    """``count`` messages, the stream reopened each time its body ends (as
    sockjs-client does), and how many bodies ended on the way."""
    received, ended = [], 0
    while len(received) < count:
        try:
            received.extend(viewer.receive())
        except Closed as closed:
            assert closed.code is None, "the body ended with a close frame: %s" % closed
            ended += 1
            viewer.reopen()
    return received, ended


@pytest.mark.parametrize("client", STREAMING, ids=lambda c: c.transport)
def test_a_body_ends_at_the_response_limit_and_the_next_stream_goes_on(broker, client):
    with WebSocketClient(broker.url) as publisher, client(broker.url) as viewer:
        sent = ["%03d %s" % (i, PADDING) for i in range(MESSAGES)]
        for message in sent:
            publisher.send(message)
            assert publisher.receive() == [message]
        assert viewer.response.getheader("Connection") == "close"
        received, ended = receive_reopening(viewer, MESSAGES)
        assert received == sent and ended >= 1
        publisher.send("live")
        assert receive_reopening(viewer, 1)[0] == ["live"]


@pytest.mark.parametrize("client", STREAMING, ids=lambda c: c.transport)
def test_a_client_that_ends_its_stream_ends_its_session(broker, client):
    viewer = client(broker.url).open()
    wait_until(lambda: broker.stats()["connections_total"] == 1)
    viewer.sock.shutdown(socket.SHUT_RDWR)
    viewer.close()
    wait_until(lambda: broker.stats()["connections_total"] == 0)
    viewer.request()
    assert closed_with(viewer) == (1002, "Connection interrupted")


def test_a_session_nobody_polls_expires_after_the_disconnect_delay(start_broker):
    # Sessions are checked every second: expired within 2 s of its delay, long before SockJS's default 5 s.
    broker = start_broker("--disconnect-delay", "1")
    XhrPollingClient(broker.url).open()
    wait_until(lambda: broker.stats()["connections_total"] == 1)
    wait_until(lambda: broker.stats()["connections_total"] == 0, timeout=4)
