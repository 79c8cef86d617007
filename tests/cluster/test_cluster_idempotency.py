"""Idempotent publish in a cluster: the key lives in Redis beside the stream, so a
retry reaching another broker publishes nothing and gets the first answer."""

from sockjs_clients import WebSocketClient

from cluster_clients import AUTH, receive_until


def publish(broker, body, key):
    return broker.request("POST", "/publish", body, dict(AUTH, **{"Idempotency-Key": key}))


def test_retries_through_every_broker_publish_once(start_redis, start_cluster):
    redis = start_redis()
    brokers = start_cluster(redis, 2)
    with WebSocketClient(brokers[1].url) as viewer:
        for n in range(3):
            answers = [publish(broker, b"donation %d" % n, "d%d" % n) for broker in brokers + brokers]
            assert {str(a) for a in answers} == {str(answers[0])}, answers
            assert answers[0][0] == 200 and "-" in answers[0][1]["position"]["offset"]
        status, answer = publish(brokers[1], b"another body", "d0")
        assert status == 422, (status, answer)
        brokers[0].request("POST", "/publish", b"end", AUTH)
        assert receive_until(viewer, "end") == ["donation 0", "donation 1", "donation 2", "end"]
    replayed = [broker.stats()["idempotency"]["replayed"] for broker in brokers]
    assert sum(replayed) == 9 and [broker.stats()["idempotency"]["refused"] for broker in brokers] == [0, 1]
    # Three donations and "end" came in; a retry, or a key reused, is no message in.
    assert sum(broker.stats()["messages_in"] for broker in brokers) == 4
