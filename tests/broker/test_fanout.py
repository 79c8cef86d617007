"""Every message reaches every client, on every transport, in publish order."""

import contextlib
import json

import pytest

from sockjs_clients import ALL, WebSocketClient, XhrStreamingClient, wait_until

@pytest.mark.parametrize("sender", ALL, ids=lambda c: c.transport)
def test_message_from_any_transport_reaches_every_transport(broker, sender):
    with contextlib.ExitStack() as stack:
        listeners = [stack.enter_context(cls(broker.url)) for cls in ALL]
        source = stack.enter_context(sender(broker.url))
        source.send("hello from %s" % sender.transport)
        for client in listeners + [source]:
            assert client.receive() == ["hello from %s" % sender.transport], client.transport


def test_publish_order_is_kept_for_every_client(broker):
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(cls(broker.url)) for cls in ALL for _ in range(3)]
        sent = ["m%d" % i for i in range(200)]
        for start in range(0, len(sent), 20):
            clients[0].send(*sent[start:start + 20])
        for client in clients:
            assert client.collect(len(sent)) == sent, client.transport


def test_json_values_travel_unchanged(broker):
    """A backend's JSON value, and a client's string, reach every client as they were sent."""
    with WebSocketClient(broker.url) as a, XhrStreamingClient(broker.url) as b:
        value = {"total": 1234.5, "currency": "USD", "donors": [1, 2], "note": "caf\u00e9 \u2028"}
        status, _ = broker.request("POST", "/publish", json.dumps(value).encode(),
                                   {"Authorization": "Bearer s3cret", "Content-Type": "application/json"})
        assert status == 200
        assert a.receive() == [value]
        assert b.receive() == [value]
        a.send(value["note"])
        assert a.receive() == [value["note"]]
        assert b.receive() == [value["note"]]


def test_feed_mode_drops_client_messages_but_delivers_published_ones(start_broker):
    feed = start_broker("--no-client-publish", "--publish-token", "t")
    with WebSocketClient(feed.url) as a, XhrStreamingClient(feed.url) as b:
        a.send("ignored")
        status, body = feed.request("POST", "/publish", b"from backend",
                                    {"Authorization": "Bearer t"})
        assert (status, body["recipients"]) == (200, 2)
        assert a.receive() == ["from backend"]
        assert b.receive() == ["from backend"]
    assert feed.stats()["messages_in"] == 1


def test_closed_client_is_forgotten(broker):
    with WebSocketClient(broker.url) as staying:
        leaving = WebSocketClient(broker.url).open()
        leaving.close()
        staying.send("after")
        assert staying.receive() == ["after"]
        wait_until(lambda: broker.stats()["connections_total"] == 1)
