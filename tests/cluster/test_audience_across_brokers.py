"""The audience count across a cluster: every broker's clients, and a dead broker drops out."""

import contextlib

import redis

from sockjs_clients import WebSocketClient, XhrStreamingClient, wait_until

from broker.cluster.backplane import AUDIENCE_STALE_MS, audience_key


def room(broker):
    return broker.stats()["audience"]["room"]


def test_the_room_counts_every_broker_until_one_dies(start_redis, start_cluster):
    first, second = start_cluster(start_redis(), 2)
    with contextlib.ExitStack() as stack:
        for kind in (WebSocketClient, XhrStreamingClient, WebSocketClient):
            stack.enter_context(kind(first.url, timeout=10))
        for kind in (WebSocketClient, XhrStreamingClient):
            stack.enter_context(kind(second.url, timeout=10))
        wait_until(lambda: room(first) == room(second) == 5)
        assert first.stats()["audience"]["here"] == 3
        second.server.process.kill()
        second.server.process.wait(5)
        wait_until(lambda: room(first) == 3, timeout=AUDIENCE_STALE_MS / 1000 + 5)


def test_a_broker_that_stops_leaves_the_count_at_once(start_redis, start_cluster):
    redis_server = start_redis()
    first, second = start_cluster(redis_server, 2)
    counts = redis.Redis.from_url(redis_server.url)
    key = audience_key("/broadcast")
    with WebSocketClient(first.url, timeout=10), WebSocketClient(second.url, timeout=10):
        wait_until(lambda: room(first) == 2)
        assert counts.hlen(key) == 2
        second.server.stop()
        assert counts.hlen(key) == 1, "the stopped broker's count waits for its staleness"
        wait_until(lambda: room(first) == 1)
