"""Slow clients are cut off in the configured time: half-sent headers
(--header-timeout, whether they stall or trickle), idle keep-alive connections
(the same timeout, from the end of their last response) and half-sent bodies
(--body-timeout). Each is closed within its timeout plus one second, while a
canary keeps its round trip and the broker's descriptors come back; once the
broker is warm (see memory_plateau), an equal attack grows its memory by less
than RSS_BOUND_KB."""

import time

import pytest

from memory_plateau import rss_after_rounds
from probes import Canary, closed, connect, get, open_fds
from sockjs_clients import wait_until

TIMEOUT_S = 1.0
MARGIN_S = 1.0
SLOW = 50
RSS_BOUND_KB = 16 << 10


@pytest.fixture
def broker(start_broker):
    return start_broker("--header-timeout", str(TIMEOUT_S), "--body-timeout", str(TIMEOUT_S),
                        "--publish-token", "s3cret")


def all_closed_in_time(broker, canary, sockets, since, feed=None):
    """Every socket is closed by the broker within the timeout and the margin
    from ``since``; the canary is served meanwhile; ``feed(sock)`` runs on the
    sockets still open at each pass."""

    def done():
        canary.round_trip()
        still_open = [sock for sock in sockets if not closed(sock)]
        if feed is not None:
            for sock in still_open:
                feed(sock)
        return not still_open

    wait_until(done, timeout=TIMEOUT_S + MARGIN_S + 2, interval=0.1)
    took = time.monotonic() - since
    assert took < TIMEOUT_S + MARGIN_S, "closed after %.2fs" % took
    for sock in sockets:
        sock.close()


def attack(broker, start, feed=None):
    """Open SLOW connections, ``start(sock)`` on each, and check that all are cut
    off in time, round after round until the broker's memory is seen to plateau;
    returns the messages the canaries sent."""
    sent = []

    def one_round():
        with Canary(broker) as canary:
            fds = open_fds(broker.server.pid)
            sockets = [connect(broker) for _ in range(SLOW)]
            since = time.monotonic()
            for sock in sockets:
                start(sock)
            all_closed_in_time(broker, canary, sockets, since, feed)
            wait_until(lambda: open_fds(broker.server.pid) <= fds)
            assert get(broker, "/healthz")[0] == 200
            sent.append(canary.sent)

    rss = rss_after_rounds(broker, one_round)
    assert rss[-1] - rss[-2] < RSS_BOUND_KB, "RSS after the warm-up and after one more attack: %s KiB" % rss
    return sum(sent)


def test_half_sent_headers_are_cut_off(broker):
    attack(broker, lambda sock: sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: broker\r\n"))


def test_trickled_headers_are_cut_off(broker):
    attack(broker, lambda sock: sock.sendall(b"GET /healthz HTTP/1.1\r\n"),
           feed=lambda sock: sock.sendall(b"X"))


def test_idle_keep_alive_connections_are_closed(broker):
    attack(broker, lambda sock: get(broker, "/healthz", sock=sock))


def test_half_sent_bodies_are_cut_off(broker):
    def start(sock):
        sock.sendall(b"POST /publish HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer s3cret\r\n"
                     b"Content-Length: 1000\r\n\r\n" + b"x" * 10)

    canary_messages = attack(broker, start)
    assert broker.stats()["messages_in"] == canary_messages
