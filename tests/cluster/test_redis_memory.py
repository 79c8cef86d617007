"""Redis at ``maxmemory`` with ``noeviction``: publishing goes on, the stream cut to what fits, and
while Redis refuses every write ``/healthz`` says so, until space is freed."""


from sockjs_clients import wait_until

from cluster_clients import full_redis, publish, refusing_redis

LARGE = 60 * 1024


def test_a_full_redis_cuts_the_stream_and_publishing_goes_on(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1, "--max-message-size", str(LARGE + 16))
    store = full_redis(server, 6 * 1024 * 1024)
    answers = [publish(broker, "%03d" % n + "x" * LARGE) for n in range(200)]  # 12 MB
    assert [status for status, _ in answers] == [200] * 200, [a for a in answers if a[0] != 200][:2]
    backplane = broker.stats()["backplane"]
    assert backplane["memory_trims"] >= 1 and not backplane["memory_full"]
    assert store.xlen("sockjs-broker:/broadcast") < 100
    assert broker.request("GET", "/healthz")[0] == 200
    store.close()


def test_a_redis_refusing_every_write_is_unhealthy_until_space_is_freed(start_redis, start_cluster):
    server = start_redis()
    broker, = start_cluster(server, 1)
    store = refusing_redis(server)
    status, answer = publish(broker, "refused")
    assert status == 503 and "maxmemory" in answer["error"]
    status, health = wait_until(lambda: (lambda h: h[0] == 503 and h)(broker.request("GET", "/healthz")))
    assert health["status"] == "unavailable" and "refuses writes for memory" in health["reason"]
    assert broker.stats()["backplane"]["memory_full"]
    store.delete("someone-else")
    wait_until(lambda: broker.request("GET", "/healthz")[0] == 200)
    assert publish(broker, "after")[0] == 200
    store.close()
