"""Named rooms on two brokers sharing one real Redis: a room's messages, positions, counters
and idempotency keys are the room's on every broker; a broker reads a room (its channel
subscribed) only while it has a viewer of it, and stops once the room is forgotten."""

import redis

from broker.cluster import named_rooms
from broker.config import DEFAULTS
from sockjs_clients import WebSocketClient, XhrPollingClient, wait_until

from cluster_clients import AUTH

# How long a client waits to read, or a condition to hold: a loaded machine (two PyPy brokers
# warming up beside the others' tests) takes longer than sockjs_clients' default.
PATIENCE = 20.0


def publish(broker, query, text, headers=None):
    status, answer = broker.request("POST", "/publish?" + query, text.encode(), dict(AUTH, **(headers or {})))
    assert status == 200, answer
    return answer


def data_until(client, *lasts):
    """The messages with data (``"d"``) ``client`` receives until it has received each of ``lasts``."""
    received = []
    while not set(lasts) <= {message["d"] for message in received}:
        received.extend(message for message in client.receive() if "d" in message)
    return received


def subscribers(store, room):
    """How many connections (one a broker) Redis has subscribed to ``room``'s channel."""
    channel = named_rooms.room_key(DEFAULTS.prefix, room)
    return dict(store.pubsub_numsub(channel))[channel.encode()]


def test_a_room_reaches_its_viewers_on_every_broker_and_a_broker_without_one_reads_nothing_of_it(
        start_redis, start_cluster):
    server = start_redis()
    store = redis.Redis.from_url(server.url)
    one, two = start_cluster(server, 2)
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=a&positions=1") as a, \
            WebSocketClient(two.url, timeout=PATIENCE, query="rooms=b&positions=1") as b, \
            XhrPollingClient(two.url, timeout=PATIENCE, query="rooms=b,c&positions=1") as b_and_c:
        assert a.receive()[0]["c"] == "open" and b.receive()[0]["c"] == "open", "each room loaded"
        assert sorted(message["r"] for message in b_and_c.collect(2)) == ["b", "c"]
        # A room is loaded once its SUBSCRIBE is sent, not once Redis took it (a gap in between
        # is read from the stream): on a loaded machine NUMSUB may lag the first messages.
        wait_until(lambda: [subscribers(store, room) for room in "abc"] == [1, 1, 1], PATIENCE)
        publish(two, "room=a", "a1")  # broker two has no viewer of a: it writes, and reads nothing
        publish(one, "room=b", "b1")
        publish(two, "room=a", "a-end")
        assert [m["d"] for m in data_until(a, "a-end")] == ["a1", "a-end"]
        publish(one, "room=c", "c1")
        publish(one, "room=b", "b-end")
        assert [m["d"] for m in data_until(b, "b-end")] == ["b1", "b-end"], "nothing of a in b"
        assert sorted(m["r"] + ":" + m["d"] for m in data_until(b_and_c, "b-end", "c1")) == ["b:b-end", "b:b1", "c:c1"]
        assert [subscribers(store, room) for room in "abc"] == [1, 1, 1], "a publish subscribes to nothing"
        assert [broker.stats()["named_rooms"]["rooms_read"] for broker in (one, two)] == [1, 2]
    assert two.stats()["rooms"] == 3, "two holds a, made by its publishes, without reading it"
    store.close()


def test_a_room_forgotten_on_a_broker_is_unsubscribed_from_and_read_again_when_joined_again(
        start_redis, start_cluster):
    server = start_redis()
    store = redis.Redis.from_url(server.url)
    one, two = start_cluster(server, 2, "--history-seconds", "1")
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=a&positions=1") as staying:
        assert staying.receive()[0]["c"] == "open"
        with WebSocketClient(two.url, timeout=PATIENCE, query="rooms=a&positions=1") as leaving:
            assert leaving.receive()[0]["c"] == "open"
            assert subscribers(store, "a") == 2
        # Empty, then idle a second (--history-seconds): forgotten, and its channel left.
        wait_until(lambda: two.stats()["rooms_forgotten"] == 1, PATIENCE)
        wait_until(lambda: subscribers(store, "a") == 1, PATIENCE)
        assert two.stats()["rooms"] == 0 and one.stats()["rooms"] == 1
        assert two.stats()["named_rooms"]["rooms_read"] == 0
        position = publish(two, "room=a", "after")["position"]
        assert staying.receive() == [{"o": position["offset"], "d": "after"}]
        with WebSocketClient(two.url, timeout=PATIENCE, query="rooms=a&positions=1&epoch=%s&since=%s"
                             % (position["epoch"], position["offset"])) as back:
            assert back.receive() == [{"c": "resumed", "epoch": position["epoch"], "o": position["offset"]}]
            assert subscribers(store, "a") == 2
    store.close()


def test_each_room_has_its_positions_across_brokers_and_a_session_resumes_each_at_another(
        start_redis, start_cluster):
    server = start_redis()
    one, two = start_cluster(server, 2, "--replay", "1")
    a1 = publish(one, "room=a", "a1")["position"]
    b1 = publish(two, "room=b", "b1")["position"]
    assert a1["epoch"] != b1["epoch"]
    with XhrPollingClient(one.url, timeout=PATIENCE, query="rooms=a,b&positions=1") as both:
        opened = sorted(both.collect(4), key=lambda m: (m["r"], "c" not in m))
    assert opened == [{"r": "a", "c": "open", "epoch": a1["epoch"], "o": a1["offset"]},
                      {"r": "a", "o": a1["offset"], "d": "a1"},
                      {"r": "b", "c": "open", "epoch": b1["epoch"], "o": b1["offset"]},
                      {"r": "b", "o": b1["offset"], "d": "b1"}], "each room's epoch, Redis's, whoever published"
    a2 = publish(two, "room=a", "a2")["position"]
    b2 = publish(one, "room=b", "b2")["position"]
    a3 = publish(two, "room=a", "a3")["position"]
    assert a2["epoch"] == a3["epoch"] == a1["epoch"] and b2["epoch"] == b1["epoch"]
    query = "rooms=a,b&positions=1&epoch.a=%s&since.a=%s&epoch.b=%s&since.b=%s" % (
        a1["epoch"], a1["offset"], b2["epoch"], b2["offset"])
    with WebSocketClient(two.url, timeout=PATIENCE, query=query) as again:
        assert again.collect(4) == [{"r": "a", "c": "resumed", "epoch": a1["epoch"], "o": a3["offset"]},
                                    {"r": "a", "o": a2["offset"], "d": "a2"},
                                    {"r": "a", "o": a3["offset"], "d": "a3"},
                                    {"r": "b", "c": "resumed", "epoch": b1["epoch"], "o": b2["offset"]}]
    query = "rooms=a&positions=1&epoch=%s&since=%s" % (a2["epoch"], a2["offset"])
    with WebSocketClient(one.url, timeout=PATIENCE, query=query) as a:
        assert a.collect(2) == [{"c": "resumed", "epoch": a1["epoch"], "o": a3["offset"]},
                                {"o": a3["offset"], "d": "a3"}]
    query = "positions=1&epoch=%s&since=%s" % (a3["epoch"], a3["offset"])
    with WebSocketClient(two.url, timeout=PATIENCE, query=query) as default:
        assert default.receive()[0]["reason"] == "epoch", "the default room is another history"


def test_each_room_counts_its_own_counters_across_brokers_and_an_idempotency_key_is_its_rooms(
        start_redis, start_cluster):
    server = start_redis()
    one, two = start_cluster(server, 2)
    assert publish(one, "room=a&key=raised&op=add", "5")["value"] == "5"
    assert publish(two, "room=a&key=raised&op=add", "2")["value"] == "7"
    assert publish(two, "room=b&key=raised&op=add", "9")["value"] == "9"
    assert publish(one, "key=raised&op=add", "1")["value"] == "1"
    with WebSocketClient(two.url, timeout=PATIENCE, query="rooms=a") as a:
        assert a.receive() == [{"counter": "raised", "value": "7"}]
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=b,a") as both:
        assert both.collect(2) == [{"r": "b", "d": {"counter": "raised", "value": "9"}},
                                   {"r": "a", "d": {"counter": "raised", "value": "7"}}]
    with WebSocketClient(two.url, timeout=PATIENCE) as default:
        assert default.receive() == [{"counter": "raised", "value": "1"}]
    once = {"Idempotency-Key": "donation-1"}
    publish(two, "room=c", "c0")  # c's epoch is two's; one's own room c has another until it loads c
    first_c = publish(one, "room=c", "x", once)
    assert publish(two, "room=c", "x", once) == publish(one, "room=c", "x", once) == first_c
    first_d = publish(two, "room=d", "x", once)
    assert first_d["position"]["epoch"] != first_c["position"]["epoch"], "the same key in d is d's"
    status, refused = two.request("POST", "/publish?room=d", b"y", dict(AUTH, **once))
    assert status == 422, refused
    counted = publish(one, "room=a&key=raised&op=add", "1", {"Idempotency-Key": "c1"})
    assert publish(two, "room=a&key=raised&op=add", "1", {"Idempotency-Key": "c1"}) == counted
    assert counted["value"] == "8"
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=c&positions=1") as c:
        opened = c.receive()
        assert opened[0] == {"c": "open", "epoch": first_c["position"]["epoch"], "o": first_c["position"]["offset"]}
    assert sum(broker.stats()["idempotency"]["replayed"] for broker in (one, two)) == 3


def audience_heard(client, count):
    """Wait until ``client`` hears the audience ``count`` announced (a one-room session's form)."""
    while {"audience": count} not in client.receive():
        pass


def test_each_room_announces_its_viewers_at_every_broker_and_no_other_rooms(start_redis, start_cluster):
    server = start_redis()
    store = redis.Redis.from_url(server.url)
    one, two = start_cluster(server, 2, "--announce-audience", "1")
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=a") as a_here, \
            WebSocketClient(two.url, timeout=PATIENCE, query="rooms=a") as a_there, \
            WebSocketClient(two.url, timeout=PATIENCE, query="rooms=b") as b:
        audience_heard(a_here, 2)
        audience_heard(a_there, 2)
        audience_heard(b, 1)
        with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=b") as b_here:
            audience_heard(b_here, 2)
            audience_heard(b, 2)
        audience_heard(b, 1)
    assert store.exists(named_rooms.room_key(DEFAULTS.prefix, "a") + ":audience")
    store.close()


def test_a_clients_message_in_a_room_reaches_that_rooms_viewers_on_every_broker_only(start_redis, start_cluster):
    server = start_redis()
    one, two = start_cluster(server, 2)
    with WebSocketClient(one.url, timeout=PATIENCE, query="rooms=a&positions=1") as viewer, \
            WebSocketClient(one.url, timeout=PATIENCE, query="rooms=b&positions=1") as other, \
            WebSocketClient(two.url, timeout=PATIENCE, query="rooms=a&positions=1") as sender:
        for client in (viewer, other, sender):
            assert client.receive()[0]["c"] == "open"
        sender.send("hello a")
        assert [m["d"] for m in data_until(viewer, "hello a")] == ["hello a"]
        assert [m["d"] for m in data_until(sender, "hello a")] == ["hello a"], "its own message, back from Redis"
        publish(two, "room=b", "b-end")
        assert [m["d"] for m in data_until(other, "b-end")] == ["b-end"], "nothing of a in b"
    assert two.stats()["named_rooms"]["relays_refused"] == 0


def test_what_a_room_missed_while_its_broker_lost_redis_is_read_back_once_in_order_and_counted(proxied_pair):
    publisher, cut_off, proxy = proxied_pair
    with WebSocketClient(cut_off.url, timeout=PATIENCE, query="rooms=a&positions=1") as viewer:
        assert viewer.receive()[0]["c"] == "open"
        publish(publisher, "room=a", "a1")
        assert [m["d"] for m in data_until(viewer, "a1")] == ["a1"]
        proxy.refuse()
        wait_until(lambda: cut_off.stats()["backplane"]["state"] != "up", PATIENCE)
        for text in ("a2", "a3", "a4"):
            publish(publisher, "room=a", text)
        proxy.forward()
        received = []
        while not any(m.get("d") == "a4" for m in received):
            received.extend(viewer.receive())
        assert [m.get("d", m.get("c")) for m in received] == ["a2", "a3", "a4"], "each once, in order, no gap"
    figures = cut_off.stats()["named_rooms"]
    assert figures["reconnects"] >= 1 and figures["gaps"] == {"expired": 0, "epoch": 0}
