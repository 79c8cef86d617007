"""Counters in a cluster: the total lives in Redis, changed by one script with the stream
entry that carries it. Backends adding at once through three brokers, retrying with their
Idempotency-Key, one broker killed and restarted under them: the total is exact, every
viewer ends on it, and none saw its counter go down."""

import decimal
import http.client
import threading

import redis as redis_py

from longest_counters import LONGEST_TOTAL, add_counters, counter_path, longest_name
from live_room import Subscriber
from sockjs_clients import (RawWebSocketClient, WebSocketClient, XhrPollingClient, XhrStreamingClient, closed_with,
                            wait_until)

from cluster_clients import AUTH

BACKENDS = 4
OPERATIONS = 150
VIEWER_KINDS = (WebSocketClient, XhrStreamingClient, XhrPollingClient)


class Backend(threading.Thread):
    """Adds ``amount(n)`` to "raised" and sends its running total to "peak" with op=max,
    OPERATIONS times, through ``brokers`` in turn; each request has its Idempotency-Key, every
    third is sent twice (the second time through the next broker), and a request that fails
    (a broker killed, or restarting) is retried through the next broker with its key."""

    def __init__(self, number, brokers):
        super().__init__(daemon=True)
        self.number = number
        self.brokers = brokers
        self.added = decimal.Decimal(0)
        self.turn = number
        self.retries = 0
        self.error = None

    def request(self, path, body, key):
        for _ in range(200):
            broker = self.brokers[self.turn % len(self.brokers)]
            self.turn += 1
            try:
                status, answer = broker.request("POST", path, body.encode(), dict(AUTH, **{"Idempotency-Key": key}))
            except (OSError, http.client.HTTPException):
                status, answer = None, None
            if status == 200:
                return answer
            self.retries += 1
            threading.Event().wait(0.05)
        raise AssertionError("%s: no broker took it" % key)

    def run(self):
        try:
            for n in range(OPERATIONS):
                amount = decimal.Decimal(n % 7 + 1) / 4  # 0.25 to 1.75
                key = "b%d-%d" % (self.number, n)
                sends = 2 if n % 3 == 0 else 1
                answers = [self.request("/publish?key=raised&op=add", str(amount), key) for _ in range(sends)]
                assert answers[-1] == answers[0], answers
                self.added += amount
                self.request("/publish?key=peak&op=max", str(self.added), key + "-max")
        except BaseException as error:  # reported by the test
            self.error = error


def counter_values(subscriber, name):
    return [decimal.Decimal(m["value"]) for m in subscriber.delivered
            if isinstance(m, dict) and m.get("counter") == name]


def test_concurrent_backends_with_retries_and_a_broker_killed_make_the_exact_total(start_redis, start_cluster):
    redis = start_redis()
    brokers = start_cluster(redis, 3)
    viewers = [Subscriber(kind, broker.url, timeout=10) for broker in brokers for kind in VIEWER_KINDS]
    for viewer in viewers:
        viewer.start()
    wait_until(lambda: all(viewer.live for viewer in viewers), timeout=20)
    backends = [Backend(n, brokers) for n in range(BACKENDS)]
    for backend in backends:
        backend.start()
    wait_until(lambda: sum(b.added for b in backends) > 50, timeout=30)
    killed = brokers[2]
    port = killed.url.split(":")[2].split("/")[0]
    killed.server.process.kill()
    killed.server.process.wait(10)
    wait_until(lambda: sum(b.added for b in backends) > 150, timeout=30)
    brokers[2], = start_cluster(redis, 1, "--port", port)
    for backend in backends:
        backend.join(120)
        assert not backend.is_alive() and backend.error is None, backend.error
    raised = sum(backend.added for backend in backends)
    peak = max(backend.added for backend in backends)
    expected = {"raised": "%.2f" % raised, "peak": "%.2f" % peak}
    for broker in brokers:
        wait_until(lambda: broker.stats()["counters"] == expected, timeout=20)
    for viewer in viewers:
        wait_until(lambda: counter_values(viewer, "raised")[-1:] == [raised]
                   and counter_values(viewer, "peak")[-1:] == [peak], timeout=30)
    for viewer in viewers:
        viewer.stop()
        for name in ("raised", "peak"):
            values = counter_values(viewer, name)
            assert values == sorted(values), "%s saw %s go down: %s" % (viewer.transport, name, values)
    assert any(viewer.losses for viewer in viewers[6:]), "the killed broker's viewers came back"
    assert sum(backend.retries for backend in backends) > 0
    # A broker started later gets every counter at once, without --replay.
    late, = start_cluster(redis, 1)
    with WebSocketClient(late.url) as newcomer:
        assert sorted(newcomer.receive(), key=str) == sorted(
            [{"counter": name, "value": value} for name, value in expected.items()], key=str)


def count(broker, name, amount, op="add", key=None):
    headers = dict(AUTH, **({"Idempotency-Key": key} if key else {}))
    return broker.request("POST", "/publish?key=%s&op=%s" % (name, op), amount.encode(), headers)


def test_totals_past_a_double_stay_exact_and_bounds_are_kept_in_redis(start_redis, start_cluster):
    redis = start_redis()
    a, b = start_cluster(redis, 2)
    assert count(a, "big", "999999999998.999999")[1]["value"] == "999999999998.999999"
    assert count(b, "big", "0.000001")[1]["value"] == "999999999999.000000"
    status, answer = count(a, "big", "1")
    assert status == 400 and "more than 12 digits" in answer["error"], answer
    assert count(b, "big", "-999999999999.5")[1]["value"] == "-0.500000"
    assert count(a, "peak", "123456789012.345678", op="max")[1]["value"] == "123456789012.345678"
    status, answer = count(b, "peak", "123456789012.345677", op="max")
    assert status == 200 and answer["value"] == "123456789012.345678", "a max below changes nothing"
    assert count(b, "peak", "123456789012.345679", op="max")[1]["value"] == "123456789012.345679"
    assert count(a, "peak", "-5", op="max")[1]["value"] == "123456789012.345679"
    for path, body in (("?key=big&op=add", b"1e3"), ("?key=big&op=mul", b"1"), ("?op=add", b"1")):
        status, answer = a.request("POST", "/publish" + path, body, AUTH)
        assert status == 400, (status, answer)
    first = count(a, "big", "0.5", key="once")
    assert count(b, "big", "0.5", key="once") == first and first[1]["value"] == "0.000000"
    assert count(b, "big", "0.7", key="once")[0] == 422
    expected = {"big": "0.000000", "peak": "123456789012.345679"}
    for broker in (a, b):
        wait_until(lambda: broker.stats()["counters"] == expected)
    assert sum(broker.stats()["messages_in"] for broker in (a, b)) == 6, "a refusal, a max below, a retry: none"


def test_the_counters_redis_holds_are_those_every_first_batch_has_room_for(start_redis, start_cluster):
    redis = start_redis()
    a, b = start_cluster(redis, 2, "--max-buffer", "64KiB")
    taken, refusal = add_counters(a, 1000, AUTH)
    wait_until(lambda: len(b.stats()["counters"]) == taken)
    with XhrPollingClient(b.url, query="positions=1") as viewer:
        assert a.request("POST", "/publish", b"the next message", AUTH)[0] == 200
        received = viewer.collect(1 + taken + 1)  # its start, every counter, the message
    assert received[-1]["d"] == "the next message" and b.stats()["slow_consumer_disconnects"] == 0
    assert refusal is not None and refusal[0] == 400 and "counters already" in refusal[1], (taken, refusal)
    status, answer = b.request("POST", counter_path(longest_name(taken)), LONGEST_TOTAL.encode(), AUTH)
    assert status == 400 and answer["error"].endswith("the room has %d counters already, the most whose totals "
                                                      "fit half of a first batch (--max-buffer)" % taken), answer
    store = redis_py.Redis.from_url(redis.url)
    try:
        fields = store.hgetall("sockjs-broker:/broadcast:counters")
    finally:
        store.close()
    assert len(fields) == 4 * taken, "v:, s:, o: and m: for each counter, nothing for those refused"
    assert sum(len(field) + len(value) for field, value in fields.items()) < taken * 500


def test_no_backend_or_client_of_any_broker_speaks_as_a_counter(start_redis, start_cluster):
    redis = start_redis()
    a, b = start_cluster(redis, 2)
    assert count(a, "raised", "5")[0] == 200
    forged = b'{"counter": "raised", "value": "999999"}'
    with RawWebSocketClient(b.url) as raw:
        assert raw.receive() == ['{"counter":"raised","value":"5"}']
        for broker, headers in ((a, dict(AUTH, **{"Content-Type": "application/json"})),
                                (b, dict(AUTH, **{"Idempotency-Key": "forged"}))):
            status, answer = broker.request("POST", "/publish", forged, headers)
            assert status == 422 and "the broker's own" in answer["error"], (status, answer)
        with WebSocketClient(a.url) as offender:
            offender.send(forged.decode())
            assert closed_with(offender) == (1007, "A message in the broker's own shape")
        assert a.request("POST", "/publish", b"after", AUTH)[0] == 200
        assert raw.receive() == ["after"]
    store = redis_py.Redis.from_url(redis.url)
    try:
        assert store.xlen("sockjs-broker:/broadcast") == 2, "the counter's total, and after"
    finally:
        store.close()
