"""broker-client.js in named rooms, in Chromium, on every transport at once, through the shipped
haproxy config in front of three brokers run by the shipped unit and sharing one real Redis: for
each transport a page in room a, a page in room b and a page in both over one session
(rooms.js). Numbered messages go to both rooms, each acknowledged (retried on another broker,
with its Idempotency-Key, until answered 200), while each broker in turn is sent SIGTERM,
drains, exits 0 and is started again on its port, haproxy having it UP before the next; then
one broker is killed (SIGKILL) and started again. After each fault a marker goes to both
rooms: every page has delivered every message of each of its rooms up to it, once, in order,
none of a room it is not in, and no gap (the rooms' histories are in Redis, which stays); at
the end, every message of each room.

Each room gets 5 messages a second: every page here is one client address to haproxy, whose
limit is 1000 requests in 10 s an address, and a polling page makes a request for about every
message of its rooms: the nine polling pages (the page in both rooms counting twice) make at
most about 600 in 10 s, the pages' reconnections fitting in what is left. The publisher goes
through haproxy's side for backends, which has no such limit."""

import signal
import subprocess
import threading
import time

import pytest

from broker.core.drain import MAX_STRETCH
from broker.protocol import close_codes
from chromium_scripts import ReportingScript
from sockjs_clients import wait_until
from test_transports import TRANSPORTS

TOKEN = "t"
ROOMS = ("a", "b")
BROKERS = 3
RATE = 5
# Longer than haproxy takes to see a draining broker's 503s (its next check, within a second).
DRAIN_SECONDS = 3.0
# Heartbeats every second: the pages take 3 s of silence as a dead connection.
FLAGS = ("--publish-token", TOKEN, "--heartbeat-delay", "1", "--drain-seconds", "%g" % DRAIN_SECONDS)
MARKERS = ["restarted-%d" % n for n in range(BROKERS)] + ["killed", "end"]
# How the second client of page a, asking for a room of a bad name, ends: stopped by the broker's close.
REFUSED = "stopped %d %s" % close_codes.ROOM_REFUSED


class RoomsPublisher(threading.Thread):
    """Publishes ``a0`` in room a and ``b0`` in room b, then ``a1`` and ``b1``, ... at ``RATE`` a
    room a second, through ``target`` (haproxy's side for backends), each with its text as its
    Idempotency-Key and retried until answered 200. ``published``: each room's acknowledged
    messages, in the order sent; ``mark(text)`` sends ``text`` to both rooms between two rounds."""

    def __init__(self, target):
        super().__init__(daemon=True)
        self.target = target
        self.published = {room: [] for room in ROOMS}
        self.rounds = 0
        self.error = None
        self.stopping = threading.Event()
        self._turn = threading.Lock()

    def _publish(self, room, text, deadline_s=30.0):
        deadline = time.monotonic() + deadline_s
        headers = {"Authorization": "Bearer " + TOKEN, "Idempotency-Key": text}
        while True:
            try:
                if self.target.request("POST", "/publish?room=" + room, text.encode(), headers)[0] == 200:
                    self.published[room].append(text)
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "no broker took %r in room %s" % (text, room)
            time.sleep(0.05)

    def mark(self, text):
        with self._turn:
            for room in ROOMS:
                self._publish(room, text)

    def run(self):
        start = time.monotonic()
        try:
            while not self.stopping.is_set():
                with self._turn:
                    for room in ROOMS:
                        self._publish(room, "%s%d" % (room, self.rounds))
                self.rounds += 1
                self.stopping.wait(max(0.0, start + self.rounds / RATE - time.monotonic()))
        except BaseException as error:  # reported by stop()
            self.error = error

    def publish_for(self, seconds):
        """Until ``seconds`` more of rounds are published."""
        target = self.rounds + int(seconds * RATE)
        wait_until(lambda: self.rounds >= target or not self.is_alive(), timeout=seconds + 30)
        assert self.error is None, self.error

    def stop(self):
        self.stopping.set()
        self.join(35)
        assert not self.is_alive(), "the publisher is stuck"
        if self.error is not None:
            raise self.error


def drain(cluster, n):
    """Send broker ``n`` SIGTERM; it exits 0 once drained, with no traceback."""
    process = cluster.brokers[n].server.process
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(MAX_STRETCH * DRAIN_SECONDS + 15)
    except subprocess.TimeoutExpired:
        pytest.fail("broker %d did not exit after its drain" % n, pytrace=False)
    output = cluster.brokers[n].server.output
    assert process.returncode == 0, output[-4000:]
    assert "Traceback" not in output, output[-4000:]


def check(report, published, marker):
    """Every page delivered, in each of its rooms, the room's messages up to ``marker`` once, in
    order, none of another room, and told no gap; returns how many times each page opened."""
    opens = {}
    for transport, pages in report["pages"].items():
        for page in ("a", "b", "ab"):
            found = pages[page]
            assert sorted(found["log"]) == sorted(page), (transport, page, list(found["log"]))
            for room in page:
                expected = published[room][:published[room].index(marker) + 1]
                log = found["log"][room]
                assert found["gaps"][room] == [], (transport, page, room, found["gaps"][room], found["states"])
                assert log[:len(expected)] == expected, (
                    transport, page, room, marker, "missing", sorted(set(expected) - set(log))[:20],
                    "twice", len(log) - len(set(log)), "foreign", [m for m in log if m not in published[room]][:5])
            assert found["strays"] == [], (transport, page)
            opens[transport, page] = found["opens"]
    return opens


def test_pages_in_rooms_through_haproxy_keep_each_rooms_messages_through_a_rolling_restart_and_a_kill(
        start_redis, start_cluster):
    cluster = start_cluster(BROKERS, "--redis", start_redis().url, *FLAGS)

    def next_report(marker):
        report = browser.next_report()
        assert report.get("marker") == marker, str(report)[:2000]
        return report

    publisher = RoomsPublisher(cluster.backend_side)
    with ReportingScript("rooms.js", cluster.origin, ",".join(TRANSPORTS), *MARKERS) as browser:
        try:
            ready = next_report(None)
            assert ready["sends"] == {transport: False for transport in TRANSPORTS}, "a page of two rooms only listens"
            publisher.start()
            for n in range(BROKERS):
                publisher.publish_for(1)
                drain(cluster, n)
                cluster.start_again(n)
                publisher.publish_for(1)
                publisher.mark(MARKERS[n])
                check(next_report(MARKERS[n]), publisher.published, MARKERS[n])

            publisher.publish_for(1)
            held = [broker.stats()["connections_total"] for broker in cluster.brokers]
            victim = held.index(max(held))
            process = cluster.brokers[victim].server.process
            process.send_signal(signal.SIGKILL)
            assert process.wait(5) == -signal.SIGKILL
            publisher.publish_for(2)
            cluster.start_again(victim)
            publisher.publish_for(1)
            publisher.mark("killed")
            check(next_report("killed"), publisher.published, "killed")

            publisher.stop()
            publisher.mark("end")
            last = next_report("end")
            opens = check(last, publisher.published, "end")
            for transport, pages in last["pages"].items():
                for page in ("a", "b", "ab"):
                    for room in page:
                        assert pages[page]["log"][room] == publisher.published[room], (transport, page, room)
            # Every broker was restarted: every page lost its connection and opened again.
            assert all(count >= 2 for count in opens.values()), opens
            assert all(pages["a"]["refused"][-1] == REFUSED for pages in last["pages"].values())
            assert cluster.proxy.statuses()[429] == 0, "a page went over haproxy's per-address limit"
            browser.wait(20)
        finally:
            publisher.stopping.set()
