"""--announce-audience: every client hears how many watch, when it changes, in the room's frames."""

import json

from prometheus_client.parser import text_string_to_metric_families

from sockjs_clients import RawWebSocketClient, WebSocketClient, XhrStreamingClient, wait_until


def audience_of(messages):
    return [m["audience"] for m in messages if isinstance(m, dict) and list(m) == ["audience"]]


def next_audience(client):
    while True:
        counts = audience_of(client.receive())
        if counts:
            return counts[-1]


def test_clients_hear_the_count_when_it_changes(start_broker):
    broker = start_broker("--announce-audience", "1")
    first = WebSocketClient(broker.url, timeout=10).open()
    assert next_audience(first) == 1
    second = XhrStreamingClient(broker.url, timeout=10).open()
    assert next_audience(second) == 1  # on joining: the latest count, before the next change
    assert next_audience(first) == 2
    assert next_audience(second) == 2
    wait_until(lambda: broker.stats()["audience"] == {"here": 2, "room": 2, "announce_every_s": 1, "announced": 2})
    text = broker.request("GET", "/metrics")[1]
    (audience,) = [s.value for f in text_string_to_metric_families(text) for s in f.samples
                   if s.name == "sockjs_broker_audience"]
    assert audience == 2


def test_the_count_rides_in_a_frame_of_the_room_and_is_not_replayed(start_broker):
    broker = start_broker("--announce-audience", "1", "--replay", "5")
    raw = RawWebSocketClient(broker.url, timeout=10).open()
    assert json.loads(raw.receive()[0]) == {"audience": 1}
    listener = WebSocketClient(broker.url, timeout=10).open()
    assert listener.receive() == [{"audience": 1}]  # on joining: the latest count
    listener.send("hello")
    frames = []
    while not any("hello" in frame for frame in frames) or not any(audience_of(frame) for frame in frames):
        frames.append(listener.receive())
    # The new count goes out at the end of the room's next frame (here: the chat line's), or
    # alone when the room stays quiet for a second: never ahead of a message in its frame.
    assert [count for frame in frames for count in audience_of(frame)] == [2]
    for frame in frames:
        if audience_of(frame):
            assert frame[-1] == {"audience": 2}
    late = WebSocketClient(broker.url, timeout=10).open()
    # The replay holds the room's messages only; the latest count follows it, in its frame.
    assert late.receive() == ["hello", {"audience": 2}]


def test_without_the_flag_nothing_is_announced_but_the_count_is_kept(start_broker):
    broker = start_broker("--replay", "1")
    client = WebSocketClient(broker.url, timeout=10).open()
    client.send("only this")
    assert client.receive() == ["only this"]
    assert broker.stats()["audience"] == {"here": 1, "room": 1, "announce_every_s": 0, "announced": None}
