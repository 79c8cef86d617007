"""A client that stops reading is cut off at --max-buffer; the others lose
nothing and the broker's memory reaches a plateau."""

import json
import socket

import websocket
from prometheus_client.parser import text_string_to_metric_families

from loadtest.procstat import rss_kb

from memory_plateau import rss_after_rounds
from sockjs_clients import RawWebSocketClient, WebSocketClient, session_url, stalled_websocket, wait_until

MESSAGE = "x" * 8000
PER_FRAME = 7
PUSH_BYTES = 32 << 20
# On PyPy, the condition of machines whose CPU reports a large cache (see
# broker.ops.gc_policy): PyPy's own rule would start the first major collection
# only when the heap reaches 1 GiB, so a broker that left its garbage to it
# grows by about three times what is pushed, push after push. CPython ignores it.
FAR_MAJOR_COLLECTION = {"PYPY_GC_MIN": "1GB"}


def stalled_xhr_streaming(origin, url):
    """An xhr-streaming request whose response is never read."""
    host, port = origin[len("http://"):].split(":")
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect((host, int(port)))
    path = session_url(url)[len(origin):] + "/xhr_streaming"
    sock.sendall(("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\n\r\n" % (path, host)).encode())
    return sock


def test_stalled_clients_are_cut_off_and_others_get_everything(start_broker):
    # Without a history: it keeps the last 1,000 messages, 8 MB of these, alive until PyPy
    # promotes them, and they come back only at a major collection, a saw-tooth up to the
    # collector's trigger that one round cannot tell from a leak. This measures what
    # slow consumers cost (the history's bound is tested in tests/unit/broker/core).
    broker = start_broker("--history", "0", "--max-buffer", "256KiB", "--max-message-size", "128KiB",
                          "--client-rate", "0", env=FAR_MAJOR_COLLECTION)
    fast = [WebSocketClient(broker.url).open(), WebSocketClient(broker.url).open(),
            RawWebSocketClient(broker.url).open()]
    stalled = [stalled_websocket(broker.url), stalled_xhr_streaming(broker.origin, broker.url)]
    wait_until(lambda: broker.stats()["connections_total"] == 5)

    rounds = PUSH_BYTES // (len(MESSAGE) * PER_FRAME)
    frame = json.dumps(["%d %s" % (i, MESSAGE) for i in range(PER_FRAME)])
    expected = json.loads(frame)

    pushes = []

    def push():
        for _ in range(rounds):
            fast[0].ws.send(frame)
            for client in fast:
                assert client.collect(PER_FRAME) == expected, client.transport
        pushes.append(rounds)

    # The first push cuts the stalled clients; once the broker is warm (see
    # memory_plateau), an equal push must not grow it.
    rss = rss_after_rounds(broker, push)
    stats = broker.stats()
    assert stats["slow_consumer_disconnects"] == 2
    assert stats["connections_total"] == 3
    assert stats["messages_in"] == sum(pushes) * PER_FRAME
    assert rss[-1] - rss[-2] < (PUSH_BYTES >> 10) // 4, \
        "RSS after the warm-up and after one more %d MiB push: %s KiB" % (PUSH_BYTES >> 20, rss)
    for sock in stalled:
        sock.close()


def test_a_cut_client_that_reads_again_learns_why(start_broker):
    """Its backlog is full, yet the session's close frame still goes behind it:
    a client that reads on finds ``c[3008,"Slow consumer"]`` after the messages
    it was sent, not a bare close."""
    broker = start_broker("--max-buffer", "64KiB", "--client-rate", "0")
    publisher = WebSocketClient(broker.url).open()
    stalled = stalled_websocket(broker.url)
    wait_until(lambda: broker.stats()["connections_total"] == 2)
    for i in range(1000):
        if broker.stats()["slow_consumer_disconnects"]:
            break
        publisher.send("%d %s" % (i, MESSAGE))
        assert publisher.receive() == ["%d %s" % (i, MESSAGE)]
    assert broker.stats()["slow_consumer_disconnects"] == 1
    frames = []
    try:
        while len(frames) < 1000:
            frames.append(stalled.recv())
    except websocket.WebSocketConnectionClosedException:
        pass
    sockjs_frames = [frame for frame in frames if frame]  # websocket-client returns a close frame as ""
    assert sockjs_frames[-1] == 'c[3008,"Slow consumer"]', sockjs_frames[-2:]
    assert all(frame.startswith("a[") for frame in sockjs_frames[:-1])
    stalled.close()


def test_clients_that_stop_reading_are_cut_after_the_write_timeout(start_broker):
    """Below --max-buffer, but not taking their bytes: cut --write-timeout
    seconds after they fell behind, while a reading client loses nothing; what
    they held costs at most 8 MiB each, measured on a warm broker (a round of
    stalled clients, as many times as memory_plateau says, then one more)."""
    count, write_timeout = 20, 2.0
    broker = start_broker("--max-buffer", "8MiB", "--write-timeout", str(write_timeout),
                          "--client-rate", "0", "--max-message-size", "128KiB")
    publisher = WebSocketClient(broker.url).open()
    held = []

    def one_round():
        cut_before = broker.stats()["slow_consumer_disconnects"]
        stalled = [stalled_websocket(broker.url) for _ in range(count)]
        wait_until(lambda: broker.stats()["connections_total"] == count + 1)
        before = rss_kb(broker.server.pid)
        # More than the kernel's buffers hold, then many small frames behind it.
        for i in range(100):
            publisher.send("%d %s" % (i, MESSAGE * 7))
            assert publisher.receive() == ["%d %s" % (i, MESSAGE * 7)]
        for i in range(2000):
            publisher.send("%020d" % i)
            assert publisher.receive() == ["%020d" % i]
        held.append(rss_kb(broker.server.pid) - before)
        wait_until(lambda: broker.stats()["slow_consumer_disconnects"] == cut_before + count,
                   timeout=write_timeout + 1)
        for ws in stalled:
            ws.close()

    rss_after_rounds(broker, one_round)
    assert held[-1] < count * 8 << 10, "RSS grew by %s KiB while the clients were stalled, round by round" % held
    publisher.send("still here")
    assert publisher.receive() == ["still here"]
    assert broker.stats()["slow_consumers"]["behind"] == 0


def test_small_messages_reach_the_write_timeout_not_megabytes_of_kernel_buffer(start_broker):
    """20-byte messages to clients that stopped reading: the kernel holds at
    most --send-buffer of them per client (its own autotuning would take
    megabytes and minutes before the broker saw anything), so the broker
    holds them back soon, and cuts each client --write-timeout after that."""
    count, write_timeout = 20, 1.0
    broker = start_broker("--write-timeout", str(write_timeout), "--client-rate", "0")
    publisher = WebSocketClient(broker.url).open()
    stalled = [stalled_websocket(broker.url) for _ in range(count)]
    wait_until(lambda: broker.stats()["connections_total"] == count + 1)
    sent = 0
    while broker.stats()["slow_consumers"]["behind"] < count:
        assert sent < 20000, "the kernel took %d bytes per client" % (sent * 28)
        for _ in range(500):
            publisher.send("%020d" % sent)
            assert publisher.receive() == ["%020d" % sent]
            sent += 1
    held = broker.stats()["slow_consumers"]
    assert 0 < held["unsent_bytes"] <= count * held["max_buffer"]
    metrics = {sample.name: sample.value for family in text_string_to_metric_families(broker.request("GET", "/metrics")[1])
               for sample in family.samples}
    assert 0 < metrics["sockjs_broker_connections_behind"] <= count
    assert 0 < metrics["sockjs_broker_unsent_bytes"] <= count * held["max_buffer"]
    wait_until(lambda: broker.stats()["slow_consumer_disconnects"] == count, timeout=write_timeout + 1)
    assert broker.stats()["slow_consumers"]["behind"] == 0
    assert broker.stats()["slow_consumers"]["unsent_bytes"] == 0
    publisher.send("still here")
    assert publisher.receive() == ["still here"]
    for ws in stalled:
        ws.close()
