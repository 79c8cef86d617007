"""Rooms on every transport: a client of a room gets that room's messages only, the default
room's clients what they always got; a client of several rooms gets each one's, saying its room."""

import json

import pytest

from sockjs_clients import ALL, RawWebSocketClient, WebSocketClient, wait_until

AUTH = {"Authorization": "Bearer t"}


def publish(broker, room, text):
    """POST /publish of ``text`` in ``room`` (None: the default room); its answer."""
    path = "/publish" if room is None else "/publish?room=%s" % room
    status, answer = broker.request("POST", path, text.encode(), AUTH)
    assert status == 200, answer
    return answer


def received(client, count):
    """The next ``count`` messages of ``client``, a raw websocket's read as JSON where they are."""
    messages = client.collect(count)
    if isinstance(client, RawWebSocketClient):
        return [json.loads(m) if m.startswith("{") else m for m in messages]
    return messages


@pytest.mark.parametrize("transport", ALL, ids=lambda transport: transport.transport)
def test_every_transport_gets_its_rooms_messages_only_and_several_rooms_each_saying_its_room(start_broker,
                                                                                           transport):
    broker = start_broker("--publish-token", "t")
    clients = [transport(broker.url, query=query).open() for query in ("rooms=a", "rooms=b", "", "rooms=a,b")]
    try:
        a, b, default, both = clients
        # Five subscribers: one in each room, and the session of two in both.
        wait_until(lambda: broker.stats()["connections_total"] == 5)
        assert publish(broker, "b", "b1")["recipients"] == 2
        publish(broker, None, "d1")
        assert publish(broker, "a", "a1")["recipients"] == 2
        assert received(a, 1) == ["a1"]
        assert received(b, 1) == ["b1"]
        assert received(default, 1) == ["d1"]
        assert sorted(received(both, 2), key=lambda m: m["r"]) == [{"r": "a", "d": "a1"}, {"r": "b", "d": "b1"}]
    finally:
        for client in clients:
            client.close()
    stats = broker.stats()
    assert (stats["rooms"], stats["rooms_created"], stats["messages_in"]) == (2, 2, 3)


def test_a_client_of_one_room_publishes_in_it_a_client_of_several_only_listens(start_broker):
    broker = start_broker("--publish-token", "t")
    with WebSocketClient(broker.url, query="rooms=a") as a, WebSocketClient(broker.url, query="rooms=b") as b, \
            WebSocketClient(broker.url, query="rooms=a,b") as both, WebSocketClient(broker.url) as default:
        wait_until(lambda: broker.stats()["connections_total"] == 5)
        both.send("from both")
        wait_until(lambda: broker.stats()["multiplexed_sends_dropped"] == 1)
        a.send("from a")
        assert a.receive() == ["from a"]
        assert both.receive() == [{"r": "a", "d": "from a"}]
        publish(broker, "b", "b1")
        publish(broker, None, "d1")
        assert b.receive() == ["b1"], "neither a's message nor the one dropped"
        assert default.receive() == ["d1"]
        assert both.receive() == [{"r": "b", "d": "b1"}]
    assert broker.stats()["messages_in"] == 3
