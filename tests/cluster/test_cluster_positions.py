"""Positions in a cluster: a message's offset is its stream id on every broker,
a client resumes on any broker, and a Redis that lost its data is a gap for
every client, told as it happens; one that kept it (AOF) is not."""

import redis

from broker.cluster.backplane import REPLY_TIMEOUT_S
from sockjs_clients import WebSocketClient, XhrPollingClient, XhrStreamingClient, wait_until

from cluster_clients import publish


def healthy(broker):
    return broker.request("GET", "/healthz")[0] == 200


def restart(redis, brokers):
    redis.kill()
    for broker in brokers:
        wait_until(lambda: not healthy(broker), timeout=REPLY_TIMEOUT_S + 5)
    redis.start()
    for broker in brokers:
        wait_until(lambda: healthy(broker), timeout=10)


def test_a_client_resumes_on_another_broker_after_the_stream_id_it_saw(start_redis, start_cluster):
    redis = start_redis()
    a, b = start_cluster(redis, 2)
    with WebSocketClient(a.url, query="positions=1") as first:
        epoch = first.receive()[0]["epoch"]
        status, answer = publish(a, "1")
        assert status == 200 and answer["position"]["epoch"] == epoch
        seen, = first.receive()
        assert seen == {"o": answer["position"]["offset"], "d": "1"} and "-" in seen["o"]
    assert publish(b, "2")[0] == publish(a, "3")[0] == 200
    with XhrStreamingClient(b.url, query="positions=1&epoch=%s&since=%s" % (epoch, seen["o"])) as again:
        start, *messages = again.collect(3)
        assert start["c"] == "resumed" and start["epoch"] == epoch
        assert [m["d"] for m in messages] == ["2", "3"]
        assert seen["o"] < messages[0]["o"] < messages[1]["o"]


def test_a_redis_that_lost_its_data_is_one_gap_for_every_client(start_redis, start_cluster):
    redis = start_redis()  # no persistence: a restart comes back empty
    brokers = start_cluster(redis, 2)
    clients = [WebSocketClient(brokers[0].url, query="positions=1").open(),
               XhrPollingClient(brokers[1].url, query="positions=1").open()]
    try:
        epoch = {client.receive()[0]["epoch"] for client in clients}.pop()
        assert publish(brokers[0], "before")[0] == 200
        before = [client.receive()[0] for client in clients]
        restart(redis, brokers)
        gaps = [client.receive()[0] for client in clients]
        assert [g["c"] for g in gaps] == ["gap", "gap"] and {g["reason"] for g in gaps} == {"epoch"}
        assert gaps[0]["epoch"] == gaps[1]["epoch"] != epoch
        status, answer = publish(brokers[1], "after")
        assert status == 200 and answer["position"]["epoch"] == gaps[0]["epoch"]
        after = {"o": answer["position"]["offset"], "d": "after"}
        assert [client.receive() for client in clients] == [[after], [after]]
    finally:
        for client in clients:
            client.close()
    with WebSocketClient(brokers[1].url, query="positions=1&epoch=%s&since=%s" % (epoch, before[0]["o"])) as late:
        assert late.receive()[0]["reason"] == "epoch"


def test_a_redis_that_kept_its_data_keeps_the_epoch_and_every_resume(start_redis, start_cluster, tmp_path):
    redis = start_redis(tmp_path)  # AOF, as the deployment files run it
    broker, = start_cluster(redis, 1)
    with WebSocketClient(broker.url, query="positions=1") as first:
        epoch = first.receive()[0]["epoch"]
        publish(broker, "1")
        seen, = first.receive()
    restart(redis, [broker])
    assert publish(broker, "2")[0] == 200
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=%s" % (epoch, seen["o"])) as again:
        start, missed = again.collect(2)
        assert (start["c"], start["epoch"], missed["d"]) == ("resumed", epoch, "2")


def test_a_stream_that_lost_what_brokers_sent_is_a_new_epoch_for_every_client(start_redis, start_cluster):
    """As after a failover whose new primary lacked the last messages: brokers that sent them
    start a new epoch, the others follow, and a client without positions gets only what is new."""
    server = start_redis()
    brokers = start_cluster(server, 2)
    clients = [WebSocketClient(brokers[0].url, query="positions=1").open(),
               XhrStreamingClient(brokers[1].url, query="positions=1").open()]
    plain = WebSocketClient(brokers[1].url).open()
    try:
        epoch = {client.receive()[0]["epoch"] for client in clients}.pop()
        offsets = [publish(brokers[0], text)[1]["position"]["offset"] for text in ("1", "2", "3")]
        for client in clients:
            assert [m["d"] for m in client.collect(3)] == ["1", "2", "3"]
        assert plain.collect(3) == ["1", "2", "3"]
        store = redis.Redis.from_url(server.url)
        # As a failover's new primary that never received the last message: the brokers reconnect
        # to a stream without it.
        assert store.xdel("sockjs-broker:/broadcast", offsets[-1]) == 1
        store.client_kill_filter(_type="normal", skipme=True)
        store.close()
        wait_until(lambda: all(healthy(broker) for broker in brokers), timeout=10)
        status, answer = publish(brokers[1], "4")
        assert status == 200
        for client in clients:
            gap, *tail = client.collect(3)
            assert (gap["c"], gap["reason"]) == ("gap", "epoch") and gap["epoch"] != epoch
            assert [m["d"] for m in tail] == ["1", "2", "4"], client.transport
        assert plain.receive() == ["4"]
        assert {b.stats()["backplane"]["losses_failover"] for b in brokers} == {1}
    finally:
        for client in clients + [plain]:
            client.close()
