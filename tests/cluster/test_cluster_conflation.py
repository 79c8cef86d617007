"""Conflating keys in a cluster: the key travels in the stream, so every broker
conflates the same way, and a broker started later replays each key's latest."""

import json

from sockjs_clients import WebSocketClient, XhrPollingClient

from cluster_clients import AUTH, receive_until


def publish(broker, message, key=None):
    path = "/publish" + ("?key=" + key if key else "")
    status, _ = broker.request("POST", path, json.dumps(message).encode(),
                               dict(AUTH, **{"Content-Type": "application/json"}))
    assert status == 200


def test_every_broker_conflates_by_the_key_in_the_stream(start_redis, start_cluster):
    redis = start_redis()
    a, b = start_cluster(redis, 2)
    with XhrPollingClient(b.url) as poller, WebSocketClient(b.url) as watcher:
        for message, key in (({"total": 1}, "total"), ("line 1", None), ({"total": 2}, "total"),
                             ("line 2", None), ({"total": 3}, "total")):
            publish(a, message, key)
        seen = receive_until(watcher, {"total": 3})
        # A reader that keeps up gets every value, unless a read of the stream brought two at once.
        assert [m for m in seen if isinstance(m, str)] == ["line 1", "line 2"]
        assert [m["total"] for m in seen if isinstance(m, dict)] in ([1, 2, 3], [1, 3], [2, 3], [3])
        assert poller.collect(3) == ["line 1", "line 2", {"total": 3}]
        publish(a, "line 3")
        assert watcher.receive() == ["line 3"]
    late, = start_cluster(redis, 1, "--replay", "1")
    with WebSocketClient(late.url) as newcomer:
        assert newcomer.receive() == [{"total": 3}, "line 3"], "the last line, and each key's latest"
