"""Websocket pings: a peer that stops answering them is closed, one that
answers stays however idle it is (browsers answer pings by themselves).

A peer whose pong is late is sent a close frame and cut at once (not given
Tornado's 5 s to answer it), so a silent peer is gone within interval +
timeout."""

import time

import websocket

from loadtest.framing.websocket_frames import OP_PING, OP_PONG, OP_TEXT, client_frame, parse_frames
from probes import Canary, open_fds
from sockjs_clients import WebSocketClient, fall_behind, raw_websocket, session_url, wait_until

INTERVAL_S = 0.5
TIMEOUT_S = 0.5
MARGIN_S = 1.0
SILENT = 10


def websocket_urls(broker):
    """A SockJS websocket URL and the raw websocket URL, alternately."""
    sockjs = "ws" + session_url(broker.url)[4:] + "/websocket"
    raw = "ws" + broker.url[4:] + "/websocket"
    return [sockjs, raw]


def answer_pings(ws):
    """Read what has arrived; websocket-client answers each ping as it reads it."""
    ws.settimeout(0.01)
    try:
        while True:
            ws.recv()
    except websocket.WebSocketTimeoutException:
        pass
    finally:
        ws.settimeout(5)


def test_silent_peers_are_closed_and_answering_ones_stay(start_broker):
    broker = start_broker("--ws-ping-interval", str(INTERVAL_S), "--ws-ping-timeout", str(TIMEOUT_S))
    with Canary(broker) as canary:
        idle = [websocket.create_connection(url, timeout=5) for url in websocket_urls(broker) * 2]
        fds = open_fds(broker.server.pid)
        since = time.monotonic()
        # Connected, then never read again: no pong ever goes back.
        silent = [websocket.create_connection(url, timeout=5)
                  for _ in range(SILENT // 2) for url in websocket_urls(broker)]
        wait_until(lambda: broker.stats()["connections_total"] == 1 + len(idle) + len(silent))

        def silent_ones_gone():
            for ws in idle + [canary.client.ws]:
                answer_pings(ws)
            return broker.stats()["connections_total"] == 1 + len(idle)

        limit = INTERVAL_S + TIMEOUT_S + MARGIN_S
        wait_until(silent_ones_gone, timeout=limit + 2, interval=0.1)
        assert time.monotonic() - since < limit
        assert broker.stats()["ping_timeout_disconnects"] == len(silent)
        metrics = broker.request("GET", "/metrics")[1]
        assert 'sockjs_broker_disconnects_total{reason="ping_timeout"} %d.0' % len(silent) in metrics
        wait_until(lambda: open_fds(broker.server.pid) <= fds)

        # The answering ones lived through a dozen pings and still get everything.
        canary.round_trip()
        for ws in idle:
            assert "canary" in ws.recv()
        for ws in idle + silent:
            ws.close()


def test_a_client_behind_gets_one_pong_for_all_its_pings(start_broker):
    """A client that stopped reading and pings: while the broker holds a
    backlog for it, each pong would queue behind it too (48 bytes of memory for
    2 counted), so only the latest ping is answered, once the backlog is written."""
    broker = start_broker("--client-rate", "0", "--write-timeout", "60")
    publisher = WebSocketClient(broker.url).open()
    path = session_url(broker.url)[len(broker.origin):] + "/websocket"
    sock, received = raw_websocket(broker.origin, path, receive_buffer=4096)
    with sock:
        wait_until(lambda: broker.stats()["connections_total"] == 2)
        fall_behind(broker, publisher)
        sock.sendall(b"".join(client_frame(b"%d" % i, OP_PING) for i in range(1000)))
        # Read in order after the pings: once the publisher has it, they were read too.
        sock.sendall(client_frame(b'["after the pings"]'))
        assert publisher.receive() == ["after the pings"]
        while True:
            found, _ = parse_frames(bytes(received))
            pongs = [bytes(received[start:end]) for opcode, _, start, end in found if opcode == OP_PONG]
            if pongs:
                break
            data = sock.recv(65536)
            assert data, "closed"
            received += data
        texts = [bytes(received[start:end]) for opcode, _, start, end in found if opcode == OP_TEXT]
        assert pongs == [b"999"], pongs[:5]
        assert texts[-1] == b'a["after the pings"]'
    publisher.close()
