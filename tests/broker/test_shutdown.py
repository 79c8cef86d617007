"""SIGTERM, SIGINT and POST /admin/drain (the admin token, never the publish token): the
broker drains (see broker.core.drain).
/healthz answers 503 at once, and so does every request that would open a
session (with Retry-After, for a proxy to ask another broker), the clients are
closed with 3012 spread over --drain-seconds, then the broker stops accepting
and exits 0; a second signal closes the rest at once."""

import math
import os
import signal
import socket
import subprocess
import sys
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from probes import get, opening_requests, path_of, retry_after
from sockjs_clients import (Closed, EventSourceClient, RawWebSocketClient, WebSocketClient, XhrPollingClient,
                            XhrStreamingClient, closed_with, wait_until)

from broker.protocol.close_codes import RECONNECT

AUTH = {"Authorization": "Bearer s3cret"}
PUBLISH_AUTH = {"Authorization": "Bearer publisher"}


def draining_gauge(broker):
    text = broker.request("GET", "/metrics")[1]
    (value,) = [sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                if sample.name == "sockjs_broker_draining"]
    return value


def refused(broker):
    host, port = broker.origin[len("http://"):].split(":")
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
    except ConnectionRefusedError:
        return True
    return False


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_without_a_drain_period_a_signal_closes_every_session_and_exits_zero(start_broker, signum):
    broker = start_broker("--drain-seconds", "0")
    sockjs_clients = [WebSocketClient(broker.url).open(), XhrStreamingClient(broker.url).open(),
                      EventSourceClient(broker.url).open()]
    raw = RawWebSocketClient(broker.url).open()

    started = time.monotonic()
    broker.server.process.send_signal(signum)
    for client in sockjs_clients:
        assert closed_with(client) == RECONNECT, client.transport
    with pytest.raises(Closed) as closed:
        raw.read_frame()
    assert (closed.value.code, closed.value.reason) == RECONNECT
    assert broker.server.process.wait(5) == 0
    assert time.monotonic() - started < 5
    assert refused(broker)


def drain_progress(broker, started, total):
    """``(seconds since started, clients closed)`` from /stats until all
    ``total`` are closed or the broker stops answering."""
    progress = []
    while not progress or progress[-1][1] < total:
        try:
            closed = broker.stats()["drain"]["closed"]
        except OSError:
            break
        progress.append((time.monotonic() - started, closed))
        time.sleep(0.05)
    return progress


def test_clients_are_closed_spread_over_the_drain_period(start_broker):
    seconds = 3.0
    broker = start_broker("--drain-seconds", str(seconds), "--publish-token", "s3cret")
    clients = [WebSocketClient(broker.url).open() for _ in range(30)] + \
        [XhrStreamingClient(broker.url).open() for _ in range(5)]
    wait_until(lambda: broker.stats()["connections_total"] == len(clients))

    started = time.monotonic()
    broker.server.process.send_signal(signal.SIGTERM)
    # At once (as soon as its loop has run the signal's handler): unhealthy, and a
    # session that would open now is sent elsewhere, while the broker still serves
    # those it has not closed yet.
    wait_until(lambda: broker.request("GET", "/healthz") == (503, {"status": "draining"}), timeout=1)
    status, headers, body = get(broker, path_of(broker, broker.url) + "/info")
    assert (status, retry_after(headers), body) == (503, 1, "Server draining: connect to another\n")
    assert broker.stats()["drain"]["clients"] == len(clients)
    progress = drain_progress(broker, started, len(clients))
    # Never ahead of an even spread from the signal (the broker's own start is
    # later), and neither all at once nor none for a while.
    for at, closed in progress:
        assert closed <= math.ceil(len(clients) * at / seconds), "%d closed after %.2f s" % (closed, at)
    assert any(0 < closed < len(clients) // 2 for _, closed in progress), progress
    assert any(len(clients) // 2 < closed < len(clients) for _, closed in progress), progress
    for client in clients:
        assert closed_with(client) == RECONNECT, client.transport
    assert broker.server.process.wait(5) == 0
    assert time.monotonic() - started < seconds + 3
    assert refused(broker)


def test_a_second_signal_closes_the_rest_at_once(start_broker):
    broker = start_broker("--drain-seconds", "60")
    clients = [WebSocketClient(broker.url).open() for _ in range(10)]
    wait_until(lambda: broker.stats()["connections_total"] == len(clients))
    broker.server.process.send_signal(signal.SIGTERM)
    wait_until(lambda: broker.stats()["drain"]["clients"] == len(clients))
    started = time.monotonic()
    broker.server.process.send_signal(signal.SIGTERM)
    for client in clients:
        assert closed_with(client) == RECONNECT
    assert broker.server.process.wait(5) == 0
    assert time.monotonic() - started < 5


def test_admin_drain_takes_the_admin_token_and_drains(start_broker):
    broker = start_broker("--drain-seconds", "4", "--admin-token", "s3cret", "--publish-token", "publisher")
    polling = XhrPollingClient(broker.url).open()
    others = [WebSocketClient(broker.url).open() for _ in range(4)]
    wait_until(lambda: broker.stats()["connections_total"] == 5)
    assert broker.request("POST", "/admin/drain", b"")[0] == 401
    assert broker.request("POST", "/admin/drain", b"", {"Authorization": "Bearer wrong"})[0] == 403
    assert broker.request("GET", "/healthz") == (200, {"status": "ok"}) and draining_gauge(broker) == 0
    status, body = broker.request("POST", "/admin/drain", b"", AUTH)
    assert status == 202 and body["draining"] and body["seconds"] == 4
    assert broker.request("GET", "/healthz") == (503, {"status": "draining"}) and draining_gauge(broker) == 1
    # Again: the same drain goes on, not a second request that would end it.
    assert broker.request("POST", "/admin/drain", b"", AUTH)[0] == 202
    assert broker.stats()["drain"]["closed"] < 5
    for client in [polling] + others:
        assert closed_with(client) == RECONNECT, client.transport
    assert broker.server.process.wait(5) == 0


def test_the_publish_token_does_not_drain(start_broker):
    """A backend that may publish may not stop brokers: the publish token is refused on the
    drain endpoint, whether an admin token is configured or not, and the broker goes on."""
    for flags in (("--admin-token", "s3cret"), ()):
        broker = start_broker("--publish-token", "publisher", *flags)
        with WebSocketClient(broker.url) as client:
            status = broker.request("POST", "/admin/drain", b"", PUBLISH_AUTH)[0]
            assert status == (403 if flags else 404), flags
            assert broker.request("GET", "/healthz") == (200, {"status": "ok"})
            assert not broker.stats()["drain"]["draining"]
            assert broker.request("POST", "/publish", b"still here", PUBLISH_AUTH)[0] == 200
            assert client.receive() == ["still here"]
        assert broker.server.process.poll() is None


def test_admin_drain_is_disabled_without_an_admin_token(start_broker):
    broker = start_broker("--publish-token", "s3cret")
    status, body = broker.request("POST", "/admin/drain", b"", AUTH)
    assert status == 404 and "--admin-token" in body["error"], body
    assert broker.request("POST", "/admin/drain", b"")[0] == 404
    assert broker.request("GET", "/healthz") == (200, {"status": "ok"})


def test_the_admin_token_cannot_be_the_publish_token():
    done = subprocess.run([sys.executable, "-m", "broker", "--port", "0"], capture_output=True, text=True,
                          timeout=60, env=dict(os.environ, BROKER_PUBLISH_TOKEN="same", BROKER_ADMIN_TOKEN="same"))
    assert done.returncode == 2, done.stderr
    assert "--admin-token (BROKER_ADMIN_TOKEN) must not be the publish token" in done.stderr and "Traceback" not in done.stderr


def test_while_draining_a_session_that_would_open_is_refused_before_anything_of_it_is_made(start_broker):
    broker = start_broker("--drain-seconds", "30", "--admin-token", "s3cret")
    # Closed over 30 s, one at once and the next at 7.5 s: the broker drains through the test.
    clients = [WebSocketClient(broker.url).open() for _ in range(4)]
    wait_until(lambda: broker.stats()["connections_total"] == len(clients))
    assert broker.request("POST", "/admin/drain", headers=AUTH)[0] == 202
    for name, path, headers in opening_requests(broker):
        status, answer_headers, body = get(broker, path, headers=headers)
        assert (status, retry_after(answer_headers), body) == (
            503, 1, "Server draining: connect to another\n"), name
    drain = broker.stats()["drain"]
    assert drain["draining"] and drain["refused"] == len(opening_requests(broker)), drain
    metrics = broker.request("GET", "/metrics")[1]
    assert "sockjs_broker_drain_refusals_total %d.0" % drain["refused"] in metrics
    # Counted, not logged: a deploy's refusals write no line each.
    assert "503 " not in broker.server.output, broker.server.output[-2000:]
