"""Websocket pings: a peer that stops answering them is closed, one that
answers stays however idle it is (browsers answer pings by themselves).

A peer whose pong is late is sent a close frame and cut at once (not given
Tornado's 5 s to answer it), so a silent peer is gone within interval +
timeout."""

import time

import websocket

from probes import Canary, open_fds
from sockjs_clients import session_url, wait_until

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
        wait_until(lambda: open_fds(broker.server.pid) <= fds)

        # The answering ones lived through a dozen pings and still get everything.
        canary.round_trip()
        for ws in idle:
            assert "canary" in ws.recv()
        for ws in idle + silent:
            ws.close()
