"""A client that stops reading is cut off at --max-buffer; the others lose
nothing and the broker's memory stays bounded."""

import json
import socket

import websocket

from loadtest.procstat import rss_kb

from sockjs_clients import RawWebSocketClient, WebSocketClient, session_url, wait_until

MESSAGE = "x" * 8000
PER_FRAME = 7
PUSHED_BYTES = 96 << 20


def stalled_websocket(url):
    """A SockJS websocket whose reader never reads, with a tiny receive buffer."""
    ws = websocket.create_connection("ws" + session_url(url)[4:] + "/websocket", timeout=5,
                                     sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),))
    assert ws.recv() == "o"
    return ws


def stalled_xhr_streaming(origin, url):
    """An xhr-streaming request whose response is never read."""
    host, port = origin[len("http://"):].split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    path = session_url(url)[len(origin):] + "/xhr_streaming"
    sock.sendall(("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n" % (path, host)).encode())
    return sock


def test_stalled_clients_are_cut_off_and_others_get_everything(start_broker):
    broker = start_broker("--max-buffer", "256KiB", "--max-message-size", "128KiB")
    fast = [WebSocketClient(broker.url).open(), WebSocketClient(broker.url).open(),
            RawWebSocketClient(broker.url).open()]
    stalled = [stalled_websocket(broker.url), stalled_xhr_streaming(broker.origin, broker.url)]
    wait_until(lambda: broker.stats()["connections_total"] == 5)
    before = rss_kb(broker.server.pid)

    rounds = PUSHED_BYTES // (len(MESSAGE) * PER_FRAME)
    frame = json.dumps(["%d %s" % (i, MESSAGE) for i in range(PER_FRAME)])
    expected = json.loads(frame)
    for _ in range(rounds):
        fast[0].ws.send(frame)
        for client in fast:
            assert client.collect(PER_FRAME) == expected, client.transport

    stats = broker.stats()
    grown_kb = rss_kb(broker.server.pid) - before
    assert stats["slow_consumer_disconnects"] == 2
    assert stats["connections_total"] == 3
    assert stats["messages_in"] == rounds * PER_FRAME
    # Unbounded queues would hold the whole push once per stalled client; a bounded
    # broker grows by a constant (PyPy lets ~25 MiB of garbage wait for a major GC).
    assert grown_kb < (PUSHED_BYTES >> 10) // 2, "RSS grew by %d KiB" % grown_kb
    for sock in stalled:
        sock.close()
