"""A cluster on Redis Sentinel: its primary crashes, or stops for longer than the Sentinels wait,
while a backend publishes numbered messages with idempotent retries. Every message answered 200
reaches every client once, in order, and a client that may have missed anything is told a gap;
the brokers follow the failover by themselves."""

import http.client
import json
import signal
import threading
import time

import pytest
import redis

from broker.protocol.positions import offset_key
from sockjs_clients import WebSocketClient, XhrPollingClient, XhrStreamingClient, wait_until

from cluster_clients import AUTH

MESSAGES = 240
CUT_AT = 80  # the primary fails once this many are acknowledged
STREAM = "sockjs-broker:/broadcast"


class Publisher(threading.Thread):
    """Publishes ``n0`` to ``nN``, one at a time, each with its Idempotency-Key, to the brokers in
    turn; a refusal or a lost answer is retried, on the next broker, until answered 200."""

    def __init__(self, brokers, deadline):
        super().__init__(daemon=True)
        self.brokers = brokers
        self.deadline = deadline
        self.acknowledged = []
        self.refusals = []

    def run(self):
        turn = 0
        for n in range(MESSAGES):
            while time.monotonic() < self.deadline:
                turn += 1
                status, answer, retry_after = self._publish(self.brokers[turn % len(self.brokers)], n)
                if status == 200:
                    self.acknowledged.append((n, answer["position"]))
                    break
                self.refusals.append((status, retry_after, answer))
                time.sleep(0.05)
            time.sleep(0.02)

    def _publish(self, broker, n):
        host, port = broker.origin.split("//")[1].split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            conn.request("POST", "/publish", ('"n%d"' % n).encode(),
                         dict(AUTH, **{"Idempotency-Key": "n%d" % n, "Content-Type": "application/json"}))
            response = conn.getresponse()
            return response.status, json.loads(response.read()), response.getheader("Retry-After")
        except (OSError, http.client.HTTPException):
            return None, None, None
        finally:
            conn.close()


class Reader(threading.Thread):
    """Everything ``client`` (with positions) receives, until the last message or ``deadline``."""

    def __init__(self, client, deadline):
        super().__init__(daemon=True)
        self.client = client
        self.deadline = deadline
        self.received = []

    def run(self):
        last = "n%d" % (MESSAGES - 1)
        while time.monotonic() < self.deadline and not any(m.get("d") == last for m in self.received):
            self.received += self.client.receive()


def shown(received):
    """What a client shows, as broker-client.js does: the numbers of each run of messages
    between gaps, each message once (one at or before the offset of its epoch is dropped),
    and the gaps' reasons."""
    runs, gaps, epoch, offset = [[]], [], None, None
    for message in received:
        if "c" in message:
            if message["c"] == "gap":
                gaps.append(message["reason"])
                runs.append([])
            if message["epoch"] != epoch:
                epoch, offset = message["epoch"], None
        elif "d" in message:
            if offset is not None and offset_key(message["o"]) <= offset_key(offset):
                continue
            offset = message["o"]
            runs[-1].append(int(message["d"][1:]))
    return runs, gaps


def run_through_failover(group, brokers, fail):
    """Publish through ``fail(primary)``, with clients of every transport on every broker;
    check what each client showed and what the stream holds."""
    deadline = time.monotonic() + 90
    clients = [kind(broker.url, query="positions=1", timeout=30).open()
               for broker in brokers for kind in (WebSocketClient, XhrStreamingClient, XhrPollingClient)]
    readers = [Reader(client, deadline) for client in clients]
    publisher = Publisher(brokers, deadline)
    for thread in readers + [publisher]:
        thread.start()
    try:
        wait_until(lambda: len(publisher.acknowledged) >= CUT_AT, timeout=30)
        old = group.primary()
        fail(old)
        new = group.wait_failover(old)
        publisher.join(max(0, deadline - time.monotonic()))
        for reader in readers:
            reader.join(max(0, deadline - time.monotonic()))
    finally:
        for client in clients:
            client.close()
    assert [n for n, _ in publisher.acknowledged] == list(range(MESSAGES)), publisher.refusals[-5:]
    assert publisher.refusals, "the failover refused nothing: it did not happen while publishing"
    assert {(status, retry_after) for status, retry_after, _ in publisher.refusals} <= {(503, "1"), (None, None)}
    kept = [int(json.loads(fields["m"])[1:]) for _, fields in new.client.xrange(STREAM)]
    assert kept == list(range(MESSAGES)), "acknowledged, then lost %s or doubled %s by the failover" % (
        sorted(set(range(MESSAGES)) - set(kept)), sorted({n for n in kept if kept.count(n) > 1}))
    for client, reader in zip(clients, readers):
        runs, gaps = shown(reader.received)
        for run in runs:
            assert run == list(range(run[0], run[0] + len(run))) if run else True, (
                "%s: a message missed without a gap: %s" % (client.transport, run))
        assert runs[-1] == list(range(MESSAGES)), "%s: %s (gaps %s)" % (client.transport, runs[-1][:5], gaps)
        assert set(gaps) <= {"epoch"}, gaps
    for broker in brokers:  # healthy again: a loaded PyPy's loop may still count a lag of the failover
        wait_until(lambda: broker.request("GET", "/healthz")[0] == 200, 30)
    return new


@pytest.mark.alone
def test_a_primary_killed_mid_stream_loses_nothing_acknowledged(sentinel_group, start_cluster):
    brokers = start_cluster(sentinel_group, 3)
    wait_until(lambda: all(b.stats()["backplane"]["state"] == "up" for b in brokers))
    assert {b.stats()["backplane"]["min_replicas"] for b in brokers} == {1}
    run_through_failover(sentinel_group, brokers, lambda primary: primary.kill())


@pytest.mark.alone
def test_a_primary_stopped_past_the_sentinels_patience_loses_nothing_acknowledged(sentinel_group, start_cluster):
    brokers = start_cluster(sentinel_group, 3)
    wait_until(lambda: all(b.stats()["backplane"]["state"] == "up" for b in brokers))
    stopped = []

    def stop(primary):
        primary.process.send_signal(signal.SIGSTOP)
        stopped.append(primary)

    try:
        new = run_through_failover(sentinel_group, brokers, stop)
    finally:
        for primary in stopped:
            primary.process.send_signal(signal.SIGCONT)
    # Back, the old primary is made a replica of the new one, and publishing goes on.
    old, = stopped
    wait_until(lambda: old.client.info("replication")["role"] == "slave", timeout=30)
    assert new.client.info("replication")["role"] == "master"
    status, answer = brokers[0].request("POST", "/publish", b"after", AUTH)
    assert status == 200, answer
