"""SIGTERM and SIGINT: stop accepting, close every session with a close frame, exit 0."""

import signal
import socket
import time

import pytest

from sockjs_clients import (Closed, EventSourceClient, RawWebSocketClient, WebSocketClient,
                            XhrStreamingClient)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_signal_closes_every_session_and_exits_zero(start_broker, signum):
    broker = start_broker()
    sockjs_clients = [WebSocketClient(broker.url).open(), XhrStreamingClient(broker.url).open(),
                      EventSourceClient(broker.url).open()]
    raw = RawWebSocketClient(broker.url).open()
    host, port = broker.origin[len("http://"):].split(":")

    started = time.monotonic()
    broker.server.process.send_signal(signum)
    for client in sockjs_clients:
        with pytest.raises(Closed) as closed:
            client.receive()
        assert (closed.value.code, closed.value.reason) == (3000, "Go away!"), client.transport
    with pytest.raises(Closed):
        raw.receive()
    assert broker.server.process.wait(5) == 0
    assert time.monotonic() - started < 5
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((host, int(port)), timeout=1)
