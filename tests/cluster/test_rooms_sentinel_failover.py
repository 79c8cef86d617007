"""Named rooms on a cluster on Redis Sentinel: its primary is killed while a backend publishes
numbered messages in rooms a and b and adds to a counter of each (op=add), every request with
its Idempotency-Key and retried at the next broker until answered 200. Every acknowledged
message is in its room's stream once, in order, and each counter's total is exact, its answers
counting up by its step without a skip or a repeat; clients of every transport on every broker,
in room a, in b or in both over one session, show each room's messages once, in order, or after
an explicit gap of that room, and nothing of a room they are not in."""

import http.client
import json
import threading
import time
import urllib.parse

import pytest

from broker.cluster import named_rooms
from broker.config import DEFAULTS
from broker.protocol.positions import offset_key
from sockjs_clients import WebSocketClient, XhrPollingClient, XhrStreamingClient, wait_until

from cluster_clients import AUTH

ROUNDS = 120
CUT_AT = 40  # the primary fails once this many rounds are acknowledged
# A round's counter adds, every COUNT_EVERY rounds: each room's step, so that a value shows its room.
COUNT_EVERY = 3
STEPS = {"a": 1, "b": 1000}
ROOMS = tuple(STEPS)
COUNTER = "raised"
KINDS = (WebSocketClient, XhrStreamingClient, XhrPollingClient)
SESSIONS = ("a", "b", "a,b")


class Publisher(threading.Thread):
    """Round n publishes ``a<n>`` in room a and ``b<n>`` in b, and, every COUNT_EVERY rounds, adds
    each room's step to its counter; each request with its Idempotency-Key, to the brokers in
    turn, a refusal or a lost answer retried on the next broker until answered 200.
    ``acknowledged``: each room's messages, ``values``: each room's counter's answers, in order."""

    def __init__(self, brokers, deadline):
        super().__init__(daemon=True)
        self.brokers = brokers
        self.deadline = deadline
        self.rounds = 0
        self.acknowledged = {room: [] for room in ROOMS}
        self.values = {room: [] for room in ROOMS}
        self.refusals = []
        self._turn = 0

    def run(self):
        for n in range(ROUNDS):
            for room in ROOMS:
                text = "%s%d" % (room, n)
                if self._publish("room=" + room, text, text) is not None:
                    self.acknowledged[room].append(text)
                if n % COUNT_EVERY == 0:
                    query = "room=%s&key=%s&op=add" % (room, COUNTER)
                    answer = self._publish(query, str(STEPS[room]), "add-" + text)
                    if answer is not None:
                        self.values[room].append(answer["value"])
            self.rounds += 1
            time.sleep(0.02)

    def _publish(self, query, body, key):
        """The answer to ``body`` published with ``query`` and Idempotency-Key ``key``, once
        answered 200; None if no broker took it by the deadline."""
        while time.monotonic() < self.deadline:
            self._turn += 1
            status, answer, retry_after = self._request(self.brokers[self._turn % len(self.brokers)], query,
                                                        body, key)
            if status == 200:
                return answer
            self.refusals.append((status, retry_after, answer))
            time.sleep(0.05)
        return None

    def _request(self, broker, query, body, key):
        split = urllib.parse.urlsplit(broker.origin)
        conn = http.client.HTTPConnection(split.hostname, split.port, timeout=10)
        try:
            conn.request("POST", "/publish?" + query, body.encode(), dict(AUTH, **{"Idempotency-Key": key}))
            response = conn.getresponse()
            return response.status, json.loads(response.read()), response.getheader("Retry-After")
        except (OSError, http.client.HTTPException):
            return None, None, None
        finally:
            conn.close()


class Reader(threading.Thread):
    """Everything ``client`` receives, until the last message of each of ``rooms`` or ``deadline``."""

    def __init__(self, client, rooms, deadline):
        super().__init__(daemon=True)
        self.client = client
        self.rooms = rooms
        self.deadline = deadline
        self.received = []

    def run(self):
        lasts = {"%s%d" % (room, ROUNDS - 1) for room in self.rooms}
        while time.monotonic() < self.deadline and not lasts <= {str(m.get("d")) for m in self.received}:
            self.received += self.client.receive()


def shown(received, rooms):
    """What a client of ``rooms`` shows of each, as broker-client.js does: ``{room: (runs, gaps,
    values)}``, runs the messages of each run between the room's gaps, each message once (one at
    or before the offset of its room's epoch is dropped), gaps their reasons, values what its
    counter showed. A message of another room fails."""
    seen = {room: ([[]], [], []) for room in rooms}
    epochs, offsets = {}, {}
    for message in received:
        room = message.get("r", rooms[0] if len(rooms) == 1 else None)
        assert room in rooms and (len(rooms) > 1) == ("r" in message), ("not a message of", rooms, message)
        runs, gaps, values = seen[room]
        if "c" in message:
            if message["c"] == "gap":
                gaps.append(message["reason"])
                runs.append([])
            if message["epoch"] != epochs.get(room):
                epochs[room], offsets[room] = message["epoch"], None
        elif "d" in message:
            if offsets.get(room) is not None and offset_key(message["o"]) <= offset_key(offsets[room]):
                continue
            offsets[room] = message["o"]
            if isinstance(message["d"], dict):
                assert message["d"]["counter"] == COUNTER, message
                values.append(int(message["d"]["value"]))
            else:
                assert message["d"].startswith(room), ("another room's message in", room, message)
                runs[-1].append(int(message["d"][len(room):]))
    return seen


def stream(node, room):
    """What ``room``'s stream on ``node`` holds: its messages' numbers and its counter's values, in order."""
    numbers, values = [], []
    for _, fields in node.client.xrange(named_rooms.room_key(DEFAULTS.prefix, room) + ":stream"):
        message = json.loads(fields["m"])
        if isinstance(message, dict):
            values.append(int(message["value"]))
        else:
            numbers.append(int(message[len(room):]))
    return numbers, values


@pytest.mark.alone
def test_a_primary_killed_mid_stream_loses_nothing_acknowledged_in_any_room(sentinel_group, start_cluster):
    brokers = start_cluster(sentinel_group, 3)
    wait_until(lambda: all(b.stats()["backplane"]["state"] == "up" for b in brokers), timeout=20)
    deadline = time.monotonic() + 90
    clients = []
    for i, broker in enumerate(brokers):
        for j, rooms in enumerate(SESSIONS):
            kind = KINDS[(i + j) % len(KINDS)]
            clients.append((kind(broker.url, query="rooms=%s&positions=1" % rooms, timeout=30).open(),
                            tuple(rooms.split(","))))
    readers = [Reader(client, rooms, deadline) for client, rooms in clients]
    publisher = Publisher(brokers, deadline)
    for thread in readers + [publisher]:
        thread.start()
    try:
        wait_until(lambda: publisher.rounds >= CUT_AT, timeout=30)
        old = sentinel_group.primary()
        old.kill()
        new = sentinel_group.wait_failover(old)
        publisher.join(max(0, deadline - time.monotonic()))
        for reader in readers:
            reader.join(max(0, deadline - time.monotonic()))
    finally:
        for client, _ in clients:
            client.close()

    adds = len(range(0, ROUNDS, COUNT_EVERY))
    for room, step in STEPS.items():
        assert publisher.acknowledged[room] == ["%s%d" % (room, n) for n in range(ROUNDS)], publisher.refusals[-5:]
        totals = [str(step * k) for k in range(1, adds + 1)]
        assert publisher.values[room] == totals, (room, "a retried add counted twice, or one lost")
        assert stream(new, room) == (list(range(ROUNDS)), [step * k for k in range(1, adds + 1)]), (
            room, "acknowledged, then lost or doubled by the failover")
    assert publisher.refusals, "the failover refused nothing: it did not happen while publishing"
    assert {(status, retry_after) for status, retry_after, _ in publisher.refusals} <= {(503, "1"), (None, None)}
    for (client, rooms), reader in zip(clients, readers):
        for room, (runs, gaps, values) in shown(reader.received, rooms).items():
            for run in runs:
                assert run == list(range(run[0], run[0] + len(run))) if run else True, (
                    "%s in %s: a message of %s missed without a gap: %s" % (client.transport, rooms, room, run))
            assert runs[-1] == list(range(ROUNDS)), (client.transport, rooms, room, runs[-1][:5], gaps)
            assert set(gaps) <= {"epoch"}, (client.transport, rooms, room, gaps)
            assert values and values[-1] == STEPS[room] * adds, (client.transport, rooms, room, values[-5:])
            assert set(values) <= set(range(STEPS[room], STEPS[room] * (adds + 1), STEPS[room])), (
                client.transport, rooms, room, "another room's counter", values)
    for broker in brokers:
        assert broker.request("GET", "/healthz")[0] == 200
