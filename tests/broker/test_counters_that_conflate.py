"""Counters that conflate: POST /publish?key=NAME replaces, in every client's queue,
the value of that key still waiting; chat lines keep their order and their bound."""

import http.client
import itertools
import json
import socket
import time

from memory_plateau import rss_after_rounds
from sockjs_clients import XhrPollingClient, stalled_websocket, wait_until

TOKEN = {"Authorization": "Bearer t", "Content-Type": "application/json"}
PAD = "x" * 4000
UPDATES = 300


def publish_all(broker, messages):
    """POST each ``(message, key)`` on one keep-alive connection."""
    host, port = broker.origin[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        for message, key in messages:
            conn.request("POST", "/publish" + ("?key=" + key if key else ""), json.dumps(message), TOKEN)
            response = conn.getresponse()
            assert response.status == 200, (response.status, response.read())
            response.read()
    finally:
        conn.close()


def counter(n):
    return {"total": n, "pad": PAD}


def totals_until(ws, last):
    """The totals a SockJS websocket receives, up to ``last``."""
    ws.settimeout(5)
    seen = []
    while last not in seen:
        frame = ws.recv()
        assert frame[0] in "ah", frame[:80]
        seen += [m["total"] for m in json.loads(frame[1:] or "[]")]
    return seen


def test_a_stalled_viewer_of_a_counter_holds_one_value_and_is_not_cut(start_broker):
    broker = start_broker("--publish-token", "t", "--max-buffer", "64KiB", "--ws-ping-interval", "0")
    viewer = stalled_websocket(broker.url)
    publish_all(broker, [(counter(n), "total") for n in range(UPDATES)])
    stats = broker.stats()["slow_consumers"]
    assert stats["behind"] == 1, stats
    # One value waits, and perhaps the rest of one the kernel took a part of.
    assert stats["unsent_bytes"] < 2 * len(json.dumps(counter(UPDATES))) + 100, stats
    assert broker.stats()["slow_consumer_disconnects"] == 0
    seen = totals_until(viewer, UPDATES - 1)
    assert seen == sorted(seen) and len(seen) < UPDATES / 2, "values were replaced, in order"
    viewer.close()


def publish_counter_for(broker, seconds, rate=1000):
    """Counter updates at up to ``rate`` a second for ``seconds``; how many."""
    started = time.monotonic()
    sent = 0
    while time.monotonic() - started < seconds and sent < rate * seconds:
        publish_all(broker, [(counter(n), "total") for n in range(sent, sent + 50)])
        sent += 50
        time.sleep(max(0.0, started + sent / rate - time.monotonic()))
    return sent


def test_a_viewer_of_a_counter_that_reads_nothing_for_longer_than_the_write_timeout_is_not_cut(start_broker):
    """Counter updates at up to 1,000 a second for two write timeouts, the viewer reading
    nothing: it holds one value, the timeout passes it by, and it then shows the last value."""
    broker = start_broker("--publish-token", "t", "--write-timeout", "2")
    viewer = stalled_websocket(broker.url)
    sent = publish_counter_for(broker, 4.0)
    stats = broker.stats()
    assert stats["slow_consumers"]["behind"] == 1, stats
    assert stats["slow_consumers"]["unsent_bytes"] < 2 * len(json.dumps(counter(sent))) + 100, stats
    assert stats["slow_consumer_disconnects"] == 0, stats
    assert totals_until(viewer, sent - 1)[-1] == sent - 1
    viewer.close()


def test_a_viewer_of_a_counter_that_takes_nothing_for_four_write_timeouts_is_gone(start_broker):
    broker = start_broker("--publish-token", "t", "--write-timeout", "0.5", "--ws-ping-interval", "0")
    viewer = stalled_websocket(broker.url)
    publishing = time.monotonic()  # it falls behind after this, however long the publishing takes
    publish_all(broker, [(counter(n), "total") for n in range(100)])
    # Behind, or already cut when publishing took longer than its four write timeouts (a loaded machine).
    stats = broker.stats()
    assert stats["slow_consumers"]["behind"] + stats["slow_consumer_disconnects"] == 1, stats
    wait_until(lambda: broker.stats()["slow_consumer_disconnects"] == 1, timeout=10)
    assert time.monotonic() - publishing > 1.4, "cut before its fourth write timeout"
    viewer.close()


def test_a_chat_line_behind_counter_values_gets_a_whole_write_timeout(start_broker):
    """A viewer late on counter values for longer than the write timeout, then a chat line:
    the line is not cut at once, but a write timeout after it was queued."""
    broker = start_broker("--publish-token", "t", "--write-timeout", "1", "--ws-ping-interval", "0")
    viewer = stalled_websocket(broker.url)
    publish_counter_for(broker, 1.5, rate=200)
    queued = time.monotonic()  # the line is queued after this, however long its request takes
    publish_all(broker, [("a line", None)])
    wait_until(lambda: broker.stats()["slow_consumer_disconnects"] == 1, timeout=10)
    assert time.monotonic() - queued > 0.7, "cut before the line had its write timeout"
    viewer.close()


def test_a_stream_that_stops_reading_a_counter_is_let_go(start_broker):
    """An xhr-streaming viewer of a counter that reads nothing reaches its response's limit
    while behind: the end of the body is owed, and a write timeout later it is cut."""
    broker = start_broker("--publish-token", "t", "--write-timeout", "1.5")
    host, port = broker.origin[len("http://"):].split(":")
    stalled = socket.socket()
    stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    stalled.connect((host, int(port)))
    stalled.sendall(b"POST /broadcast/000/stalledstream/xhr_streaming HTTP/1.1\r\nHost: x\r\n"
                    b"Content-Length: 0\r\n\r\n")
    wait_until(lambda: broker.stats()["connections_total"] == 1)
    publish_all(broker, [(counter(n), "total") for n in range(100)])
    # Its socket closed (the one left is the /stats request's own), well before four write
    # timeouts (6 s), the rule for a viewer that takes nothing at all.
    wait_until(lambda: broker.stats()["tcp_connections"] == 1, timeout=4.5)
    stalled.close()


def test_a_stalled_reader_of_chat_lines_is_still_cut(start_broker):
    broker = start_broker("--publish-token", "t", "--max-buffer", "64KiB", "--ws-ping-interval", "0")
    viewer = stalled_websocket(broker.url)
    publish_all(broker, [(counter(n), "total" if n % 2 else None) for n in range(UPDATES)])
    wait_until(lambda: broker.stats()["slow_consumer_disconnects"] == 1)
    viewer.close()


def test_a_polling_session_between_polls_keeps_the_latest_value_and_every_line(start_broker):
    broker = start_broker("--publish-token", "t")
    with XhrPollingClient(broker.url) as poller:
        publish_all(broker, [({"total": 1}, "total"), ("line 1", None), ({"total": 2}, "total"),
                             ("line 2", None), ({"total": 3}, "total")])
        assert poller.collect(3) == ["line 1", "line 2", {"total": 3}]


def test_a_malformed_key_is_refused(start_broker):
    broker = start_broker("--publish-token", "t")
    status, answer = broker.request("POST", "/publish?key=a%20b", b"1", TOKEN)
    assert status == 400 and "key" in answer["error"]


KEYS_A_ROUND = 2000
KEYS_A_STEP = 25


def test_a_viewer_always_behind_on_endless_distinct_keys_costs_the_broker_no_more_memory(start_broker):
    """A viewer that reads what is published, but a backlog behind it: every message a
    key never seen before. What its connection remembers of the keys is bounded by its
    backlog, not by the keys ever sent: the broker's memory plateaus (it remembered every
    key, and its message, once written: about 4 KB a key, 8 MB a round)."""
    # PyPy's nursery as the broker sizes it, whatever PYPY_GC_NURSERY says: what is measured is
    # the keys a connection remembers, and a nursery of hundreds of MB an operator may choose
    # takes more rounds to settle than this test runs (the slow consumers' plateaus are run
    # with one, tox.ini's pypy3-nursery environments).
    broker = start_broker("--publish-token", "t", "--max-buffer", "256KiB", "--ws-ping-interval", "0",
                          env={"PYPY_GC_NURSERY": None})
    viewer = stalled_websocket(broker.url)
    viewer.settimeout(5)
    keys = itertools.count()

    def publish_new_keys(n):
        publish_all(broker, [({"total": k, "pad": PAD}, "key-%d" % k) for k in itertools.islice(keys, n)])

    def read_messages(n):
        while n:
            frame = viewer.recv()
            n -= frame[0] == "a"

    while broker.stats()["slow_consumers"]["unsent_bytes"] < 64 * 1024:
        publish_new_keys(KEYS_A_STEP)  # the kernel's buffers full, then a backlog stands

    def one_round():
        for _ in range(KEYS_A_ROUND // KEYS_A_STEP):
            publish_new_keys(KEYS_A_STEP)
            read_messages(KEYS_A_STEP)
        stats = broker.stats()
        assert stats["slow_consumers"]["behind"] == 1 and stats["slow_consumer_disconnects"] == 0, stats

    # Remembering every key would grow the broker 8 MB a round (4 KB a key), every round.
    rss = rss_after_rounds(broker, one_round, measured=2, warm_up=2)
    assert max(after - before for before, after in zip(rss, rss[1:])) < 4 * 1024, "KiB after each round: %s" % rss
    viewer.close()
