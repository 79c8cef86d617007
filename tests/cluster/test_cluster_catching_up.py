"""A broker that lost Redis reads what it missed when Redis answers again, and a viewer that
opens on it before it has caught up is sent nothing ahead of what it will be sent next: a
counter's total loaded then would be ahead of every message still to read, and a client
keeping positions would take the older messages after it for ones it had (broker-client.js
drops them, with no gap).

Two brokers share a real redis-server; one of them reaches it through a proxy of the test's
own (:mod:`tcp_proxy`), which cuts it off while the other publishes a backlog and a counter's
add, then lets it back with what Redis sends it slowed, so its catching up takes seconds."""

from broker.protocol.positions import offset_key
from sockjs_clients import WebSocketClient, wait_until

from cluster_clients import AUTH, receive_until

BACKLOG = 3000  # messages missed: well within the stream's length, so nothing is trimmed
BATCH = 100
PAD = "x" * 300
SLOWED_TO = 300000  # bytes a second: about 3 s to read the backlog again


def healthz(broker):
    return broker.request("GET", "/healthz")[0]


def add(broker, amount):
    status, answer = broker.request("POST", "/publish?key=raised&op=add", amount.encode(), AUTH)
    assert status == 200, answer
    return answer["position"]["offset"]


def test_a_viewer_opening_while_its_broker_catches_up_is_sent_nothing_ahead(proxied_pair):
    publisher, catching_up, proxy = proxied_pair
    first = add(publisher, "1")
    with WebSocketClient(catching_up.url, query="positions=1") as viewer:
        wait_until(lambda: any(m.get("o") == first for m in viewer.receive()), timeout=10)

    proxy.refuse()
    wait_until(lambda: healthz(catching_up) == 503, timeout=10)
    with WebSocketClient(publisher.url, timeout=20) as sender:
        for n in range(0, BACKLOG, BATCH):
            sender.send(*("%d %s" % (i, PAD) for i in range(n, n + BATCH)))
        receive_until(sender, "%d %s" % (BACKLOG - 1, PAD))
    newest = add(publisher, "1")

    proxy.bytes_per_second = SLOWED_TO
    proxy.forward()
    wait_until(lambda: healthz(catching_up) == 200, timeout=20)
    last = "%d %s" % (BACKLOG - 1, PAD)
    with WebSocketClient(catching_up.url, query="positions=1", timeout=20) as viewer:
        received = []
        while not (any(m["o"] == newest for m in received) and any(m["d"] == last for m in received)):
            received.extend(m for m in viewer.receive() if "d" in m)
    offsets = [m["o"] for m in received]
    assert offsets == sorted(offsets, key=offset_key), "a message ahead of what was sent after it"
    assert len(set(offsets)) == len(offsets)
    assert len(received) > BACKLOG / 2, "the viewer opened once its broker had caught up: nothing was tried"
