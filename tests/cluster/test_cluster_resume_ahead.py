"""A resume from an offset no broker of the cluster can have given yet is answered at once,
an ``unknown`` gap, not held for AHEAD_WAIT_S; one a broker has not delivered yet is held
until it has (tests/cluster/test_cluster_positions.py and the hub's unit tests)."""

import time

from broker.core.resumes import AHEAD_WAIT_S
from sockjs_clients import WebSocketClient

from cluster_clients import publish


def test_a_resume_from_a_far_future_stream_id_is_an_unknown_gap_at_once(start_redis, start_cluster):
    redis = start_redis()
    broker, = start_cluster(redis, 1)
    with WebSocketClient(broker.url, query="positions=1") as first:
        epoch = first.receive()[0]["epoch"]
        assert publish(broker, "1")[0] == 200
        seen, = first.receive()
    asked = time.monotonic()
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=99999999999999-0" % epoch) as ahead:
        start, = ahead.receive()
        answered = time.monotonic() - asked
    assert start == {"c": "gap", "epoch": epoch, "o": seen["o"], "reason": "unknown"}
    assert answered < AHEAD_WAIT_S / 2, "answered at once, not after the wait for a broker behind"
    assert broker.stats()["starts"]["unknown"] == 1
