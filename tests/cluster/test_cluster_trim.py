"""A broker that falls further behind than the stream keeps: its clients are told a gap, before
anything after what they missed, and what it missed is counted."""

import signal

import redis

from sockjs_clients import WebSocketClient, wait_until

STREAM = "sockjs-broker:/broadcast"
ADDED = 15000  # the stream keeps about 10,000 (broker.cluster.backplane.STREAM_MAXLEN)


def test_a_broker_the_stream_was_trimmed_past_tells_its_clients_a_gap(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    wait_until(lambda: broker.stats()["backplane"]["state"] == "up")
    store = redis.Redis.from_url(server.url)
    with WebSocketClient(broker.url, query="positions=1") as client:
        assert client.receive()[0]["c"] == "open"
        broker.server.process.send_signal(signal.SIGSTOP)  # as a broker starved of CPU for a while
        try:
            pipe = store.pipeline(transaction=False)
            for n in range(ADDED):  # another broker's publishing, meanwhile
                pipe.xadd(STREAM, {"m": '"n%d"' % n}, maxlen=10000, approximate=True)
            pipe.execute()
        finally:
            broker.server.process.send_signal(signal.SIGCONT)
        info = store.xinfo_stream(STREAM)
        trimmed = info["entries-added"] - info["length"]
        assert trimmed > 4000
        received = []
        while not received or received[-1].get("d") != "n%d" % (ADDED - 1):
            received += client.receive()
    if received[0].get("d") == "n0":  # read as it was added, before the broker stopped
        del received[0]
    gap, *messages = received
    assert (gap.get("c"), gap.get("reason")) == ("gap", "expired"), received[:3]
    numbers = [int(m["d"][1:]) for m in messages]
    assert numbers == list(range(numbers[0], ADDED)) and numbers[0] >= trimmed
    backplane = broker.stats()["backplane"]
    assert backplane["losses_trimmed"] == 1 and trimmed - 1 <= backplane["trimmed_unread"] <= trimmed
    assert backplane["state"] == "up"
    status, metrics = broker.request("GET", "/metrics")
    assert status == 200 and "sockjs_broker_backplane_trimmed_unread %d.0" % backplane["trimmed_unread"] in metrics
    assert "sockjs_broker_backplane_losses_trimmed 1.0" in metrics
    store.close()
