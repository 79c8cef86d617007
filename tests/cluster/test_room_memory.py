"""A Redis at ``maxmemory`` with ``noeviction``, written in named rooms: the rooms written give
back their idempotency records, then the rooms the broker gave one, then their own streams
(never another room's), so every publish is taken, ``/healthz`` stays 200, and a client
resuming before what a stream lost is told a gap; a Redis with nothing left to give refuses
the publish at once, and says so, until space is freed."""

import concurrent.futures
import http.client
import json
import urllib.parse


from broker.cluster import named_rooms
from broker.config import DEFAULTS
from sockjs_clients import WebSocketClient, wait_until

from cluster_clients import AUTH, full_redis, refusing_redis

ROOMS = ["a", "b", "c", "d"]
FLOOD = 3000
KEY_PAD = "k" * 240  # keys at the longest a header may give (255 characters)
LARGE = 20 * 1024
# How long a client waits to read, or a condition to hold, on a loaded machine.
PATIENCE = 20.0


def flood(broker, room, first, count, body=b"x", keyed=True):
    """POST ``count`` messages ``body`` in ``room`` (None: the default room) on one kept-alive
    connection, each with a fresh key of 255 characters if ``keyed``: their statuses, and the
    positions of those taken."""
    split = urllib.parse.urlsplit(broker.url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=PATIENCE)
    statuses, positions = [], []
    for n in range(first, first + count):
        key = {"Idempotency-Key": "%015d%s" % (n, KEY_PAD)} if keyed else {}
        connection.request("POST", "/publish" if room is None else "/publish?room=" + room, body, dict(AUTH, **key))
        response = connection.getresponse()
        answer = json.loads(response.read())
        statuses.append(response.status if response.status == 200 else (response.status, answer))
        positions.append(answer.get("position"))
    connection.close()
    return statuses, positions


def stream_length(store, room):
    return store.xlen(named_rooms.RoomKeys.of(DEFAULTS.prefix, room).stream)


def test_fresh_keys_in_named_rooms_filling_redis_never_stop_a_publish_nor_cut_a_stream(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    for n, room in enumerate(ROOMS):  # the rooms' connections and scripts in Redis before it fills
        assert flood(broker, room, 10 * FLOOD + n, 1)[0] == [200]
    store = full_redis(server, 512 * 1024)
    with concurrent.futures.ThreadPoolExecutor(len(ROOMS)) as pool:
        floods = pool.map(lambda n: flood(broker, ROOMS[n], n * FLOOD, FLOOD // len(ROOMS)), range(len(ROOMS)))
        statuses = sum((room_statuses for room_statuses, _ in floods), [])
    assert statuses == [200] * FLOOD, [status for status in statuses if status != 200][:2]
    status, answer = flood(broker, "a", 2 * FLOOD, 1)
    assert status == [200], answer
    assert broker.request("GET", "/healthz")[0] == 200
    backplane = broker.stats()["backplane"]
    assert backplane["memory_forgotten_keys"] > 0 and not backplane["memory_full"]
    assert backplane["memory_trims"] == 0, "records go before any room's history"
    store.close()


def test_a_room_without_keys_is_given_the_records_of_another_before_its_own_history(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    assert flood(broker, "plain", 0, 1, b"p" * 2048, keyed=False)[0] == [200], "its script loaded before Redis fills"
    store = full_redis(server, 512 * 1024)
    statuses, _ = flood(broker, None, 0, FLOOD)  # fresh keys in the default room, until Redis refuses writes, and on
    assert statuses == [200] * FLOOD, [status for status in statuses if status != 200][:2]
    forgotten = broker.stats()["backplane"]["memory_forgotten_keys"]
    assert forgotten > 0
    # What the flood's last give-back freed is room for up to half its records: publish until
    # the room has to be given some, at most 600 KiB, past the 512 KiB Redis had room for.
    for published in range(1, 301):
        assert flood(broker, "plain", published, 1, b"p" * 2048, keyed=False)[0] == [200]
        backplane = broker.stats()["backplane"]
        if backplane["memory_forgotten_keys"] > forgotten:
            break
    assert backplane["memory_forgotten_keys"] > forgotten, "the default room's records given to a named room"
    assert backplane["memory_trims"] == 0 and stream_length(store, "plain") == published + 1
    store.close()


def test_a_busy_room_filling_redis_cuts_its_own_stream_and_a_resume_before_the_cut_is_told_a_gap(
        start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1, "--max-message-size", str(LARGE + 16))
    quiet_statuses, quiet = flood(broker, "quiet", 0, 5, b"q" * LARGE, keyed=False)
    assert quiet_statuses == [200] * 5
    store = full_redis(server, 1024 * 1024)
    statuses, busy = flood(broker, "busy", 0, 200, b"b" * LARGE, keyed=False)  # 4 MB
    assert statuses == [200] * 200, [status for status in statuses if status != 200][:2]
    assert broker.request("GET", "/healthz")[0] == 200
    backplane = broker.stats()["backplane"]
    assert backplane["memory_trims"] >= 1 and not backplane["memory_full"]
    assert stream_length(store, "busy") < 60 and stream_length(store, "quiet") == 5, "only the busy room's history"
    first, last = busy[0], busy[-1]
    query = "rooms=busy&positions=1&epoch=%s&since=%s" % (first["epoch"], first["offset"])
    with WebSocketClient(broker.url, timeout=PATIENCE, query=query) as client:
        assert client.receive() == [{"c": "gap", "reason": "expired", "epoch": first["epoch"], "o": last["offset"]}]
    query = "rooms=quiet&positions=1&epoch=%s&since=%s" % (quiet[0]["epoch"], quiet[0]["offset"])
    with WebSocketClient(broker.url, timeout=PATIENCE, query=query) as client:
        resumed, *told = client.collect(5)
    assert resumed == {"c": "resumed", "epoch": quiet[0]["epoch"], "o": quiet[-1]["offset"]}
    assert [message["o"] for message in told] == [position["offset"] for position in quiet[1:]]
    store.close()


def test_a_named_room_with_nothing_to_give_is_refused_at_once_until_space_is_freed(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    store = refusing_redis(server)
    statuses, _ = flood(broker, "a", 0, 1)
    (status, answer), = statuses
    assert status == 503 and "memory" in answer["error"], answer
    status, health = wait_until(lambda: (lambda h: h[0] == 503 and h)(broker.request("GET", "/healthz")), PATIENCE)
    assert "refuses writes for memory" in health["reason"]
    store.delete("someone-else")
    wait_until(lambda: broker.request("GET", "/healthz")[0] == 200, PATIENCE)
    assert flood(broker, "a", 1, 1)[0] == [200]
    store.close()
