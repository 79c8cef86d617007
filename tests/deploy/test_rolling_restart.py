"""Deploy day, end to end: three brokers run by the shipped systemd unit behind the
shipped haproxy config, sharing the room through a real Redis; clients on every SockJS
transport through haproxy, each asking for positions and resuming after every lost
connection; numbered messages published through haproxy's side for backends all along.

- A rolling restart: each broker in turn is sent SIGTERM, drains (haproxy sends it no
  new websocket; each of its clients, polling ones included, is closed with 3012, spread
  over --drain-seconds, or longer for a broker holding more than its share), exits 0 and is started again on its port, and haproxy has it UP
  before the next is sent SIGTERM. Every client ends with the complete sequence, nothing
  twice and no gap, and the clients of each draining broker left it spread over its
  drain, not all at once.
- A crash: one broker of three killed with SIGKILL. Its clients resume on the other two
  with nothing lost or twice; the clients of the other two never lose their connection.
  When it is started again, the polling sessions opened elsewhere while it was away stay
  where they are (haproxy's stick table), though a third of their server ids now hash to it.

Messages go out at 5 a second: every client here is one address to haproxy
(127.0.0.1), whose limit is 1000 requests in 10 s an address, and a polling client
makes a request for about every message: the six polling clients and the publisher
make about 300 in 10 s (the publisher goes through the side for backends).
"""

import concurrent.futures
import contextlib
import http.client
import signal
import time

import pytest

from broker.core.drain import MAX_STRETCH
from broker.protocol.close_codes import RECONNECT
from live_room import Publisher, Subscriber
from sockjs_clients import (EventSourceClient, HtmlFileClient, JsonpClient, WebSocketClient, XhrPollingClient,
                            XhrStreamingClient, wait_until)

# Polling sessions opened while a broker is away: (2/3)**30, one in 190,000, that none hashes to it.
SESSIONS_WHILE_AWAY = 30
TRANSPORTS = [WebSocketClient, XhrStreamingClient, EventSourceClient, HtmlFileClient, XhrPollingClient,
              JsonpClient]
CLIENTS_PER_TRANSPORT = 3
BROKERS = 3
RATE = 5
TOKEN = "t"
# Longer than haproxy takes to see a draining broker's 503s (its next check, within a second).
DRAIN_SECONDS = 6.0
# Heartbeats every second: a subscriber stops within a second of being told to. The
# polling sessions opened while a broker is away wait for their next poll however long
# its restart takes on a slow machine (SockJS's 5 s would close them first).
FLAGS = ("--publish-token", TOKEN, "--heartbeat-delay", "1", "--drain-seconds", "%g" % DRAIN_SECONDS,
         "--disconnect-delay", "30")


@pytest.fixture
def room(start_redis, start_cluster):
    """``(cluster, subscribers, publisher)``: every subscriber's first connection
    started, then the publisher started."""
    cluster = start_cluster(BROKERS, "--redis", start_redis().url, *FLAGS)
    subscribers = [Subscriber(kind, cluster.url) for kind in TRANSPORTS for _ in range(CLIENTS_PER_TRANSPORT)]
    publisher = Publisher([cluster.backend_side], RATE, TOKEN)
    try:
        for subscriber in subscribers:
            subscriber.start()
        wait_until(lambda: all(s.live for s in subscribers), timeout=20)
        publisher.start()
        yield cluster, subscribers, publisher
    finally:
        publisher.stopping.set()
        for subscriber in subscribers:
            subscriber.stopping.set()


def publish_for(publisher, seconds):
    """Until ``publisher`` has published ``seconds`` more of messages."""
    target = publisher.sent + int(seconds * RATE)
    wait_until(lambda: publisher.sent >= target, timeout=seconds + 20)


def settle(publisher, subscribers):
    """Stop publishing; once every subscriber has delivered every message (or 30 s
    have passed), stop them, and check each has every message once, in order, and
    no gap."""
    sent = publisher.stop()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not all(len(s.delivered) >= sent for s in subscribers):
        time.sleep(0.05)
    for subscriber in subscribers:
        subscriber.stop()
    expected = [str(n) for n in range(sent)]
    for s in subscribers:
        missing = sorted(set(expected) - set(s.delivered), key=int)
        assert s.delivered == expected, (s.transport, "missing", missing[:20], "delivered", len(s.delivered),
                                         "twice", len(s.delivered) - len(set(s.delivered)), s.losses)
        assert (s.resuming.duplicates, dict(s.resuming.gaps)) == (0, {}), (s.transport, s.losses)


def drain(cluster, n, subscribers):
    """Send broker ``n`` SIGTERM and wait for it to exit 0, taken out by haproxy on
    the way; returns how many clients its drain closed, by its /stats, and how each
    subscriber that lost its connection since the signal lost it first: ``(seconds
    after the signal, close code or None)``, in order."""
    broker = cluster.brokers[n]
    process = broker.server.process
    server = ("brokers", "broker%d" % cluster.proxy.broker_ports[n])
    before = [len(s.losses) for s in subscribers]
    signalled = time.monotonic()
    process.send_signal(signal.SIGTERM)
    drained, taken_out = None, False
    while process.poll() is None:
        assert time.monotonic() < signalled + MAX_STRETCH * DRAIN_SECONDS + 10, "broker %d did not exit" % n
        with contextlib.suppress(OSError, http.client.HTTPException, ValueError):
            drained = broker.stats()["drain"]
        with contextlib.suppress(OSError):
            taken_out = taken_out or cluster.proxy.server_states()[server] != "UP"
        time.sleep(0.1)
    assert process.returncode == 0, broker.server.output[-4000:]
    assert "Traceback" not in broker.server.output, broker.server.output[-4000:]
    assert taken_out, "haproxy kept sending broker %d new websockets through its drain" % n
    assert drained is not None and drained["draining"], drained

    def lost():
        return sorted((s.losses[count][0] - signalled, s.losses[count][1])
                      for s, count in zip(subscribers, before) if len(s.losses) > count)

    # Each client it closed has seen its close by now, or will at its next read.
    deadline = time.monotonic() + 5
    while len(lost()) < drained["clients"] and time.monotonic() < deadline:
        time.sleep(0.05)
    return drained, lost()


def test_a_rolling_restart_loses_nothing_and_spreads_each_brokers_clients_over_its_drain(room):
    cluster, subscribers, publisher = room
    drains = []
    for n in range(BROKERS):
        publish_for(publisher, 1)
        drains.append(drain(cluster, n, subscribers))
        cluster.start_again(n)
        wait_until(lambda: all(s.live for s in subscribers), timeout=15)
    publish_for(publisher, 1)
    settle(publisher, subscribers)

    for n, (drained, losses) in enumerate(drains):
        # Exactly the clients of the draining broker lost their connection, each
        # closed by the drain (not cut, nor sent a new session by another broker),
        # and a broker holds two or more of them.
        assert len(losses) == drained["clients"] >= 2, (n, drained, losses)
        assert {code for _, code in losses} == {RECONNECT[0]}, (n, losses)
        # Closed at ceil(clients * t / period) t seconds after the drain began
        # (the period DRAIN_SECONDS, or up to twice that for a broker over its
        # share), they leave over (clients - 1) / clients of it: half or more.
        # Closed at once, they would leave within a fraction of a second.
        first, last = losses[0][0], losses[-1][0]
        assert DRAIN_SECONDS <= drained["period"] <= MAX_STRETCH * DRAIN_SECONDS, (n, drained)
        assert last - first >= DRAIN_SECONDS / 3, (n, losses)
        assert last < drained["period"] + 2, (n, drained, losses)
    for s in subscribers:
        assert s.losses, (s.transport, "never moved, though every broker was restarted")


def test_a_broker_killed_under_load_moves_its_own_clients_and_no_others(room):
    cluster, subscribers, publisher = room
    publish_for(publisher, 2)
    held = [broker.stats()["connections_total"] for broker in cluster.brokers]
    assert sum(held) == len(subscribers), held
    victim = held.index(max(held))
    process = cluster.brokers[victim].server.process
    process.send_signal(signal.SIGKILL)
    assert process.wait(5) == -signal.SIGKILL

    def moved():
        return [s for s in subscribers if s.losses]

    wait_until(lambda: len(moved()) >= held[victim] and all(s.live for s in subscribers), timeout=20)
    publish_for(publisher, 2)
    settle(publisher, subscribers)

    assert len(moved()) == held[victim], [(s.transport, s.losses) for s in moved()]
    for s in subscribers:
        if not s.losses:
            assert s.connections == 1, s.transport
    for broker in (broker for n, broker in enumerate(cluster.brokers) if n != victim):
        assert broker.server.process.poll() is None and "Traceback" not in broker.server.output

    wait_until(lambda: cluster.proxy.server_states()[("sessions", "broker%d" % cluster.proxy.broker_ports[victim])]
               != "UP", timeout=10)
    polls = [XhrPollingClient(cluster.url).open() for _ in range(SESSIONS_WHILE_AWAY)]
    cluster.start_again(victim)
    with concurrent.futures.ThreadPoolExecutor(len(polls)) as pool:
        # Each poll is answered by a heartbeat (every second here); one reaching the
        # broker that came back would find no session there and open a new one.
        frames = list(pool.map(lambda client: client.read_frame(), polls))
    assert frames.count("o") == 0, "%d of %d sessions moved to broker %d when it came back" % (
        frames.count("o"), len(polls), victim)
