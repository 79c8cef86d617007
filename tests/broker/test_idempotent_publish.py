"""POST /publish with an Idempotency-Key: a backend's retries publish once."""

import json

import pytest

from sockjs_clients import WebSocketClient

TOKEN = {"Authorization": "Bearer t"}


def publish(broker, body, key=None, json_body=False):
    headers = dict(TOKEN)
    if key is not None:
        headers["Idempotency-Key"] = key
    if json_body:
        headers["Content-Type"] = "application/json"
    return broker.request("POST", "/publish", body, headers)


def test_a_publisher_that_retries_every_request_three_times_publishes_each_once(start_broker):
    broker = start_broker("--publish-token", "t")
    with WebSocketClient(broker.url) as viewer:
        for n in range(5):
            answers = [publish(broker, b'{"raised": %d}' % n, "donation-%d" % n, json_body=True)
                       for _ in range(3)]
            assert {json.dumps(a, sort_keys=True) for a in answers} == {json.dumps(answers[0], sort_keys=True)}
            assert answers[0][0] == 200 and answers[0][1]["position"]["offset"] == str(n + 1)
        publish(broker, b"end")
        received = []
        while "end" not in received:
            received.extend(viewer.receive())
    assert received == [{"raised": n} for n in range(5)] + ["end"]
    stats = broker.stats()
    assert stats["messages_in"] == 6
    assert stats["idempotency"] == {"keys": 5, "replayed": 10, "refused": 0, "evicted": 0, "window_s": 600}


def test_a_key_reused_with_another_body_is_refused(start_broker):
    broker = start_broker("--publish-token", "t")
    assert publish(broker, b"first", "k")[0] == 200
    status, answer = publish(broker, b"second", "k")
    assert status == 422 and "another request" in answer["error"]
    assert publish(broker, b"first", "k", json_body=False)[0] == 200
    assert broker.stats()["messages_in"] == 1


@pytest.mark.parametrize("key", ["", "has space", "x" * 256])
def test_a_malformed_key_is_refused_and_publishes_nothing(start_broker, key):
    broker = start_broker("--publish-token", "t")
    status, answer = publish(broker, b"m", key)
    assert status == 400 and "Idempotency-Key" in answer["error"]
    assert broker.stats()["messages_in"] == 0


def test_replays_and_refusals_are_in_the_metrics(start_broker):
    broker = start_broker("--publish-token", "t")
    publish(broker, b"a", "k")
    publish(broker, b"a", "k")
    publish(broker, b"b", "k")
    text = broker.request("GET", "/metrics")[1]
    assert "sockjs_broker_idempotent_replays_total 1.0" in text
    assert "sockjs_broker_idempotent_refusals_total 1.0" in text
