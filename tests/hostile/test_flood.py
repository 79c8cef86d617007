"""A client that floods the broker with messages cannot starve the others:
it is cut at its publish rate, and even unlimited it cannot hold the loop."""

import json
import os
import struct
import threading
import time

import pytest
import websocket

from probes import open_fds
from sockjs_clients import Closed, WebSocketClient, wait_until

FLOOD_S = 3.0


def masked_frame(text):
    payload = text.encode()
    mask = os.urandom(4)
    masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return struct.pack("!BB", 0x81, 0x80 | len(payload)) + mask + masked


def test_a_flooding_client_is_cut_at_its_rate_and_counted(start_broker):
    broker = start_broker("--client-rate", "50")
    with WebSocketClient(broker.url) as canary:
        fds = open_fds(broker.server.pid)
        flooder = WebSocketClient(broker.url).open()
        flooder.ws.sock.sendall(masked_frame('["flood"]') * 1000)
        with pytest.raises(Closed) as closed:
            while True:
                flooder.receive()
        assert closed.value.code == 3009
        stats = broker.stats()
        assert stats["rate_limited_disconnects"] == 1
        assert stats["messages_in"] <= 2 * 50 + 5, "the burst is twice the rate"
        canary.collect(stats["messages_in"])
        canary.send("after the flood")
        assert canary.receive() == ["after the flood"]
        assert open_fds(broker.server.pid) <= fds, "the flooder's connection is closed at once"
        flooder.close()


def test_one_connection_cannot_hold_the_event_loop(start_broker):
    """A websocket is read for at most one budget per event-loop turn, however
    much it sends, so the HTTP API and other clients are still served."""
    broker = start_broker("--client-rate", "0", "--publish-token", "t")
    flooder = websocket.create_connection("ws" + broker.url[4:] + "/websocket", timeout=5)
    frames = masked_frame(json.dumps("x")) * 2000
    stop = time.monotonic() + FLOOD_S
    sent = []

    def flood():
        try:
            while time.monotonic() < stop:
                flooder.sock.sendall(frames)
                sent.append(len(frames))
        except OSError:
            pass

    thread = threading.Thread(target=flood)
    with WebSocketClient(broker.url) as canary:
        thread.start()
        try:
            wait_until(lambda: sum(sent) > 1 << 20)
            for i in range(5):
                assert broker.request("GET", "/healthz")[0] == 200
                headers = {"Authorization": "Bearer t"}
                assert broker.request("POST", "/publish", b"tick %d" % i, headers)[0] == 200
                deadline = time.monotonic() + 5
                while "tick %d" % i not in canary.receive():
                    assert time.monotonic() < deadline, "tick %d never arrived" % i
        finally:
            thread.join()
            flooder.close()
