"""The audience count across a cluster: every broker's clients, a dead broker drops out, and a
draining broker paces itself by its share."""

import contextlib
import signal

import redis

from sockjs_clients import WebSocketClient, XhrStreamingClient, wait_until

from broker.cluster.audience_report import AUDIENCE_STALE_MS
from broker.cluster.room_in_redis import audience_key


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


def test_a_broker_over_its_share_drains_at_the_rate_of_its_share(start_redis, start_cluster):
    """8 clients on 2 brokers: a share of 4. The one holding 6 closes them at 4 per drain, 2 a
    second, over 3 s rather than its --drain-seconds 2: a broker refilled by the brokers drained
    before it sends its clients on no faster than one holding its share would."""
    first, second = start_cluster(start_redis(), 2, "--drain-seconds", "2")
    with contextlib.ExitStack() as stack:
        for _ in range(6):
            stack.enter_context(WebSocketClient(first.url, timeout=10))
        for _ in range(2):
            stack.enter_context(WebSocketClient(second.url, timeout=10))
        wait_until(lambda: room(first) == 8)
        first.server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: first.stats()["drain"]["clients"] == 6)
        assert first.stats()["drain"]["period"] == 3.0
        assert first.server.process.wait(10) == 0
        second.server.process.send_signal(signal.SIGTERM)
        wait_until(lambda: second.stats()["drain"]["clients"] == 2)
        assert second.stats()["drain"]["period"] == 2.0, "within its share: its --drain-seconds"
