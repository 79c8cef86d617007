"""Redis killed and restarted under traffic: brokers stay up, clients stay connected,
publishing is refused while Redis is away, and delivery resumes by itself after the
last id each broker delivered: nothing acknowledged is lost, nothing arrives twice.

Redis persists to an append-only file here (fsynced before each answer), so that
"acknowledged" means "in the stream", across its restart."""

import contextlib
import signal
import threading
import time

from broker.cluster.backplane import REPLY_TIMEOUT_S
from sockjs_clients import WebSocketClient, XhrStreamingClient, wait_until

from cluster_clients import publish, receive_until

BROKERS = 3
MAX_MESSAGES = 5000


class Publisher(threading.Thread):
    """POSTs numbered messages round-robin over the brokers until stopped (or
    MAX_MESSAGES); records each one's status."""

    def __init__(self, brokers):
        super().__init__(daemon=True)
        self.brokers = brokers
        self.statuses = {}
        self.stopping = threading.Event()

    def run(self):
        for n in range(MAX_MESSAGES):
            if self.stopping.is_set():
                return
            message = "p%d" % n
            self.statuses[message] = publish(self.brokers[n % len(self.brokers)], message)
            self.stopping.wait(0.002)

    def count(self, status):
        return sum(1 for s, _ in list(self.statuses.values()) if s == status)


def healthy(broker):
    return broker.request("GET", "/healthz")[0] == 200


def test_redis_killed_and_restarted_mid_stream(start_redis, start_cluster, tmp_path):
    redis = start_redis(tmp_path)
    brokers = start_cluster(redis, BROKERS)
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(kind(b.url, timeout=20))
                   for b in brokers for kind in (WebSocketClient, XhrStreamingClient)]
        publisher = Publisher(brokers)
        publisher.start()
        stack.callback(publisher.stopping.set)
        wait_until(lambda: publisher.count(200) >= 50, timeout=20)

        redis.kill()
        for broker in brokers:
            wait_until(lambda: not healthy(broker))
            status, answer = broker.request("GET", "/healthz")
            assert status == 503 and answer["reason"].startswith("Redis: "), answer
            status, answer = publish(broker, "refused")
            assert status == 503, (status, answer)
            assert answer["error"].startswith("the cluster backplane is down: Redis: "), answer
        clients[0].send("dropped while down")
        wait_until(lambda: publisher.count(503) >= 20, timeout=20)
        for broker in brokers:
            stats = broker.stats()["backplane"]
            assert stats["state"] == "down" and stats["refused"] >= 1

        redis.start()
        for broker in brokers:
            wait_until(lambda: healthy(broker), timeout=10)
        acknowledged_before = publisher.count(200)
        wait_until(lambda: publisher.count(200) >= acknowledged_before + 50, timeout=20)
        publisher.stopping.set()
        publisher.join(10)
        assert publish(brokers[-1], "end")[0] == 200

        sequences = [receive_until(client, "end") for client in clients]
        stats = [broker.stats() for broker in brokers]
    acknowledged = {m for m, (status, _) in publisher.statuses.items() if status == 200}
    first = sequences[0]
    assert len(set(first)) == len(first), "a message arrived twice"
    assert acknowledged <= set(first), sorted(acknowledged - set(first))[:10]
    assert "dropped while down" not in first and "refused" not in first
    for sequence in sequences[1:]:
        assert sequence == first
    for broker, s in zip(brokers, stats):
        assert broker.server.process.poll() is None, broker.server.output
        assert s["connections_total"] == 2
        assert s["backplane"]["reconnects"] == 1 and s["backplane"]["state"] == "up"


def test_a_broker_started_while_redis_is_away_joins_when_it_comes(start_redis, start_cluster):
    redis = start_redis()
    redis.kill()
    broker, = start_cluster(redis, 1, "--replay", "1")
    status, answer = broker.request("GET", "/healthz")
    assert status == 503 and answer["reason"].startswith("Redis: "), answer
    assert publish(broker, "too early")[0] == 503
    assert broker.stats()["backplane"]["state"] == "down"
    redis.start()
    wait_until(lambda: healthy(broker), timeout=10)
    with WebSocketClient(broker.url) as client:
        assert publish(broker, "on time")[0] == 200
        assert client.receive() == ["on time"]


def test_a_redis_that_stops_answering_is_taken_as_gone(start_redis, start_cluster):
    """A stopped Redis keeps its connections open and answers nothing: after
    REPLY_TIMEOUT_S the broker takes it as gone, and it resumes when Redis does.
    A publish refused meanwhile may still be applied when Redis resumes (its
    XADD was sent), as after any failed write."""
    redis = start_redis()
    broker, = start_cluster(redis, 1)
    with WebSocketClient(broker.url, timeout=20) as client:
        assert publish(broker, "before")[0] == 200
        assert client.receive() == ["before"]
        redis.process.send_signal(signal.SIGSTOP)
        try:
            status, answer = publish(broker, "unanswered")
            assert status == 503, (status, answer)
            assert answer["error"] == "the cluster backplane could not publish: Redis: no answer within %g s" % (
                REPLY_TIMEOUT_S), answer
            status, answer = broker.request("GET", "/healthz")
            assert status == 503 and answer["reason"] == "Redis: no answer within %g s" % REPLY_TIMEOUT_S, answer
        finally:
            redis.process.send_signal(signal.SIGCONT)
        wait_until(lambda: healthy(broker), timeout=10)
        status, answer = publish(broker, "after")
        assert status == 200, (answer, broker.stats()["backplane"], broker.server.output[-3000:])
        assert receive_until(client, "after") in (["unanswered", "after"], ["after"])
        assert broker.stats()["backplane"]["state"] == "up"
    assert broker.server.process.poll() is None, broker.server.output


def test_a_publish_larger_than_the_socket_buffers_is_refused_on_time_by_a_stopped_redis(start_redis, start_cluster):
    """What the kernel cannot buffer for a stopped Redis waits in the broker's
    transport; taking Redis as gone drops it there, so the publish is refused
    after REPLY_TIMEOUT_S, not whenever Redis resumes reading, and the next
    publish after Redis resumes is not queued behind it."""
    big = "x" * (24 * 1024 * 1024)
    redis = start_redis()
    broker, = start_cluster(redis, 1, "--max-message-size", str(len(big) + 2))
    with WebSocketClient(broker.url, timeout=20) as client:
        redis.process.send_signal(signal.SIGSTOP)
        try:
            status, answer = publish(broker, big)
            assert status == 503, (status, answer)
            assert answer["error"] == "the cluster backplane could not publish: Redis: no answer within %g s" % (
                REPLY_TIMEOUT_S), answer
        finally:
            redis.process.send_signal(signal.SIGCONT)
        wait_until(lambda: healthy(broker), timeout=10)
        status, answer = publish(broker, "after")
        assert status == 200, (answer, broker.stats()["backplane"], broker.server.output[-3000:])
        assert receive_until(client, "after") == ["after"]
    assert broker.server.process.poll() is None, broker.server.output


def test_a_broker_stalled_past_the_reply_timeout_finds_redis_answered(start_redis, start_cluster):
    """A broker whose own process stops (a long collection, a busy moment) for longer than
    REPLY_TIMEOUT_S finds Redis's answer waiting when it resumes: it keeps its connections,
    and a publish at once is taken."""
    redis = start_redis()
    broker, = start_cluster(redis, 1)
    with WebSocketClient(broker.url, timeout=20) as client:
        assert publish(broker, "before")[0] == 200
        assert client.receive() == ["before"]
        process = broker.server.process
        process.send_signal(signal.SIGSTOP)
        try:
            # Not a wait for an outcome: the length of the stall under test.
            time.sleep(REPLY_TIMEOUT_S + 1)
        finally:
            process.send_signal(signal.SIGCONT)
        status, answer = publish(broker, "after")
        assert status == 200, (answer, broker.stats()["backplane"], broker.server.output[-3000:])
        assert client.receive() == ["after"]
        backplane = broker.stats()["backplane"]
        assert (backplane["state"], backplane["reconnects"]) == ("up", 0), backplane
