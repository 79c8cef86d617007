"""Idempotency records in Redis are bounded in count and in bytes, and a Redis they fill gives
them back before it refuses a publish: a backend sending fresh keys can neither fill Redis nor
stop the publishes of anyone else (a publish with a key or without never fails because keys
filled memory), and ``/healthz`` stays 200.

The scripts are run as the broker runs them, on a real redis-server; the flood goes through a
real broker."""

import concurrent.futures
import http.client
import json
import time
import urllib.parse

import pytest
import redis

from broker.cluster import room_in_redis
from broker.core import idempotency

from cluster_clients import AUTH, full_redis, publish

ROOM = "/broadcast"
FLOOD = 3000
KEY_PAD = "k" * 240  # keys at the longest a header may give (255 characters)


def publish_once(script, key, message, most, window_ms=600000):
    """Run PUBLISH_ONCE for ``key`` as the backplane does: (appended, id or record)."""
    appended, text = script(keys=[room_in_redis.once_records_key(ROOM), room_in_redis.stream_key(ROOM),
                                  room_in_redis.once_order_key(ROOM)],
                            args=["fingerprint 1 epoch", message, 10000, window_ms, "", idempotency.digest(key),
                                  most])
    return bool(appended), text.decode()


def test_records_past_the_most_forget_the_oldest_and_take_the_same_bytes_whatever_the_key(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    script = store.register_script(room_in_redis.PUBLISH_ONCE)
    keys = ["%d%s" % (n, KEY_PAD if n % 2 else "") for n in range(8)]
    assert all(publish_once(script, key, "m%d" % n, most=5)[0] for n, key in enumerate(keys))
    records, order = room_in_redis.once_records_key(ROOM), room_in_redis.once_order_key(ROOM)
    fields = set(store.hkeys(records)) - {b"sequence"}
    assert len(fields) == store.zcard(order) == 5
    assert {len(field) for field in fields} == {32}
    assert not publish_once(script, keys[7], "m7", most=5)[0], "a key kept is seen"
    assert publish_once(script, keys[0], "m0", most=5)[0], "the oldest key was forgotten"
    assert 0 < store.pttl(records) <= 600000 and 0 < store.pttl(order) <= 600000
    store.close()


def test_expired_records_are_forgotten_as_new_ones_are_kept(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    script = store.register_script(room_in_redis.PUBLISH_ONCE)
    for n in range(4):
        assert publish_once(script, "short%d" % n, "s", most=100, window_ms=1)[0]
    time.sleep(0.01)  # Redis's clock moves past their window
    assert publish_once(script, "kept", "k", most=100)[0]
    assert store.zrange(room_in_redis.once_order_key(ROOM), 0, -1) == [idempotency.digest("kept").encode()]
    store.close()


def flood(broker, first, count):
    """POST ``count`` one-byte messages, each with a fresh key of 255 characters, on one
    kept-alive connection: their statuses."""
    split = urllib.parse.urlsplit(broker.url)
    connection = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
    statuses = []
    for n in range(first, first + count):
        connection.request("POST", "/publish", b"x", dict(AUTH, **{"Idempotency-Key": "%015d%s" % (n, KEY_PAD)}))
        response = connection.getresponse()
        answer = json.loads(response.read())
        statuses.append(response.status if response.status == 200 else (response.status, answer))
    connection.close()
    return statuses


@pytest.mark.alone  # Redis filled to a bound: what other tests' load adds to its memory is not the broker's
def test_fresh_keys_filling_redis_never_stop_a_publish(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    store = full_redis(server, 512 * 1024)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        statuses = sum(pool.map(lambda n: flood(broker, n * FLOOD, FLOOD // 4), range(4)), [])
    assert statuses == [200] * FLOOD
    assert publish(broker, "without a key")[0] == 200
    assert broker.request("GET", "/healthz")[0] == 200
    backplane = broker.stats()["backplane"]
    assert backplane["memory_forgotten_keys"] > 0 and not backplane["memory_full"]
    assert store.zcard(room_in_redis.once_order_key(ROOM)) < FLOOD
    store.close()


def test_a_redis_that_lost_the_scripts_takes_the_next_publish_and_none_is_asked_about_first(start_redis,
                                                                                             start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    store = redis.Redis.from_url(server.url)
    store.config_resetstat()
    for n, path in enumerate(["/publish", "/publish?key=raised&op=add", "/publish?room=r",
                              "/publish?room=r&key=raised&op=add"] * 2):
        store.script_flush()  # as a new master after a failover holds none
        status, answer = broker.request("POST", path, b"1", dict(AUTH, **{"Idempotency-Key": "key-%d" % n}))
        assert status == 200, (path, answer)
        if n < 4:
            assert broker.request("POST", path, b"1", dict(AUTH, **{"Idempotency-Key": "key-%d" % n})) == \
                (status, answer), "the retry is answered as the first"
    assert "cmdstat_script|exists" not in store.info("commandstats")
    assert store.hget(room_in_redis.counters_key(ROOM), "v:raised") == b"2000000"
    store.close()
