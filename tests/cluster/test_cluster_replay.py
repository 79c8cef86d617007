"""--replay N in a cluster: the last N messages come from Redis, whoever published them."""

from sockjs_clients import ALL, WebSocketClient, XhrPollingClient

from cluster_clients import publish


def test_a_broker_started_later_replays_what_others_published(start_redis, start_cluster):
    redis = start_redis()
    first, = start_cluster(redis, 1, "--replay", "3")
    for n in range(5):
        assert publish(first, "m%d" % n)[0] == 200
    late, = start_cluster(redis, 1, "--replay", "3")
    for client in ALL:
        with client(late.url) as viewer:
            assert viewer.collect(3) == ["m2", "m3", "m4"], client.transport
    with WebSocketClient(first.url) as there, WebSocketClient(late.url) as here:
        assert here.collect(3) == there.collect(3) == ["m2", "m3", "m4"]
        assert publish(late, "m5")[0] == 200
        assert here.receive() == there.receive() == ["m5"]


def test_a_restarted_broker_loses_nothing_redis_holds(start_redis, start_cluster):
    redis = start_redis()
    broker, = start_cluster(redis, 1, "--replay", "2")
    for n in range(3):
        assert publish(broker, "m%d" % n)[0] == 200
    assert broker.server.stop() == 0, broker.server.output
    again, = start_cluster(redis, 1, "--replay", "2")
    with XhrPollingClient(again.url) as viewer:
        assert viewer.collect(2) == ["m1", "m2"]
