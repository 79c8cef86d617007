"""Per room: positions and resume, counters and their totals for late viewers, idempotency keys."""

from sockjs_clients import WebSocketClient, XhrPollingClient

AUTH = {"Authorization": "Bearer t"}


def publish(broker, query, text, headers=None):
    status, answer = broker.request("POST", "/publish?" + query, text.encode(), dict(AUTH, **(headers or {})))
    assert status == 200, answer
    return answer


def test_each_room_has_its_epoch_and_offsets_and_a_session_resumes_each_after_its_own(start_broker):
    broker = start_broker("--publish-token", "t", "--replay", "1")
    publish(broker, "room=a", "a1")
    publish(broker, "room=b", "b1")
    with XhrPollingClient(broker.url, query="rooms=a,b&positions=1") as both:
        opened = both.collect(4)
    epoch_a, epoch_b = opened[0]["epoch"], opened[2]["epoch"]
    assert epoch_a != epoch_b
    assert opened == [{"r": "a", "c": "open", "epoch": epoch_a, "o": "1"}, {"r": "a", "o": "1", "d": "a1"},
                      {"r": "b", "c": "open", "epoch": epoch_b, "o": "1"}, {"r": "b", "o": "1", "d": "b1"}]
    assert publish(broker, "room=a", "a2")["position"] == {"epoch": epoch_a, "offset": "2"}
    publish(broker, "room=b", "b2")
    publish(broker, "room=a", "a3")
    query = "rooms=a,b&positions=1&epoch.a=%s&since.a=1&epoch.b=%s&since.b=2" % (epoch_a, epoch_b)
    with WebSocketClient(broker.url, query=query) as again:
        assert again.collect(4) == [{"r": "a", "c": "resumed", "epoch": epoch_a, "o": "3"},
                                    {"r": "a", "o": "2", "d": "a2"}, {"r": "a", "o": "3", "d": "a3"},
                                    {"r": "b", "c": "resumed", "epoch": epoch_b, "o": "2"}]
    with WebSocketClient(broker.url, query="rooms=a&positions=1&epoch=%s&since=2" % epoch_a) as one:
        assert one.collect(2) == [{"c": "resumed", "epoch": epoch_a, "o": "3"}, {"o": "3", "d": "a3"}]
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=2" % epoch_a) as default:
        assert default.receive()[0]["reason"] == "epoch", "the default room is another history"


def test_each_room_counts_its_own_counters_and_a_late_viewer_gets_its_rooms_totals(start_broker):
    broker = start_broker("--publish-token", "t")
    assert publish(broker, "room=a&key=raised&op=add", "5")["value"] == "5"
    assert publish(broker, "room=b&key=raised&op=add", "9")["value"] == "9"
    assert publish(broker, "key=raised&op=add", "1")["value"] == "1"
    assert publish(broker, "room=a&key=raised&op=add", "2")["value"] == "7"
    with WebSocketClient(broker.url, query="rooms=a") as a:
        assert a.receive() == [{"counter": "raised", "value": "7"}]
    with WebSocketClient(broker.url, query="rooms=b,a") as both:
        assert both.collect(2) == [{"r": "b", "d": {"counter": "raised", "value": "9"}},
                                   {"r": "a", "d": {"counter": "raised", "value": "7"}}]
    with WebSocketClient(broker.url) as default:
        assert default.receive() == [{"counter": "raised", "value": "1"}]


def test_an_idempotency_key_publishes_once_in_each_room(start_broker):
    broker = start_broker("--publish-token", "t")
    once = {"Idempotency-Key": "donation-1"}
    first_a = publish(broker, "room=a", "x", once)
    first_b = publish(broker, "room=b", "x", once)
    first_default = broker.request("POST", "/publish", b"x", dict(AUTH, **once))[1]
    assert publish(broker, "room=a", "x", once) == first_a
    assert first_a["position"]["epoch"] != first_b["position"]["epoch"] != first_default["position"]["epoch"]
    status, refused = broker.request("POST", "/publish?room=b", b"y", dict(AUTH, **once))
    assert status == 422, refused
    stats = broker.stats()
    assert stats["messages_in"] == 3
    assert (stats["idempotency"]["keys"], stats["idempotency"]["replayed"]) == (3, 1)
