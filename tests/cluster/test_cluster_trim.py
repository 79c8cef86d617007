"""A broker that falls further behind than the stream keeps: what it missed is counted, not hidden."""

import signal

import redis

from sockjs_clients import wait_until

STREAM = "sockjs-broker:/broadcast"
ADDED = 15000  # the stream keeps about 10,000 (broker.cluster.backplane.STREAM_MAXLEN)


def test_entries_trimmed_before_a_stopped_broker_read_them_are_counted(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    wait_until(lambda: broker.stats()["backplane"]["state"] == "up")
    store = redis.Redis.from_url(server.url)
    broker.server.process.send_signal(signal.SIGSTOP)  # as a broker starved of CPU for a while
    try:
        pipe = store.pipeline(transaction=False)
        for n in range(ADDED):  # another broker's publishing, meanwhile
            pipe.xadd(STREAM, {"m": '"n%d"' % n}, maxlen=10000, approximate=True)
        pipe.execute()
    finally:
        broker.server.process.send_signal(signal.SIGCONT)
    info = store.xinfo_stream(STREAM)
    assert info["entries-added"] - info["length"] > 4000
    backplane = wait_until(lambda: (lambda b: b["delivered"] + b["trimmed_unread"] == ADDED and b)(
        broker.stats()["backplane"]), timeout=20)
    assert backplane["trimmed_unread"] >= info["entries-added"] - info["length"] - 1  # the first may have come
    assert backplane["state"] == "up"
    status, metrics = broker.request("GET", "/metrics")
    assert status == 200 and "sockjs_broker_backplane_trimmed_unread %d.0" % backplane["trimmed_unread"] in metrics
    store.close()
