"""A poll whose answer Tornado writes (a connection's first poll, or any poll
over TLS) to a client that never reads it is cut within --write-timeout, as a
websocket or a stream is: its connection, session and bytes are let go, and a
canary client is served throughout."""

import array
import fcntl
import json
import socket
import ssl
import termios
import time
import urllib.parse

import pytest

from sockjs_clients import WebSocketClient, session_url, wait_until

# Two messages of 1 MB each, queued for the session before it polls.
MESSAGE = "x" * 1000000
MESSAGES = 2
FLAGS = ("--write-timeout", "1", "--header-timeout", "2", "--disconnect-delay", "2", "--replay", "0",
         "--max-buffer", "4MiB", "--max-message-size", "1MiB", "--publish-token", "t")
# The write timeout, the sweep's period, the session's end, a loaded machine: well within.
CUT_WITHIN = 10.0
POLLS = {
    "xhr": ("POST", "/xhr", "Content-Length: 0\r\n"),
    "jsonp": ("GET", "/jsonp?c=cb", ""),
}


def unread_bytes(sock):
    """What the kernel holds for ``sock`` that it has not read."""
    count = array.array("i", [0])
    fcntl.ioctl(sock.fileno(), termios.FIONREAD, count)
    return count[0]


def poll(broker, path, transport, keep_alive, receive_buffer=None):
    """A socket to ``broker`` with a poll of the session at ``path`` sent on it
    (``keep_alive`` False: with ``Connection: close``); over TLS if the broker
    serves it; with a receive buffer of ``receive_buffer`` bytes, if given."""
    where = urllib.parse.urlsplit(broker.origin)
    sock = socket.socket()
    if receive_buffer is not None:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(5)
    sock.connect((where.hostname, where.port))
    if broker.tls is not None:
        sock = broker.tls.wrap_socket(sock, server_hostname=where.hostname)
    method, tail, headers = POLLS[transport]
    sock.sendall(("%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%s\r\n" % (
        method, path, tail, where.netloc, headers, "" if keep_alive else "Connection: close\r\n")).encode())
    return sock


def opened(sock):
    """Whether the answer on ``sock``, read to its end, is the open frame."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        data += chunk
    sock.close()
    return data.split(b"\r\n\r\n", 1)[1] in (b"o\n", b'/**/cb("o");\r\n')


def publish(broker):
    for i in range(MESSAGES):
        status, _ = broker.request("POST", "/publish", json.dumps("%d %s" % (i, MESSAGE)).encode(),
                                   {"Authorization": "Bearer t", "Content-Type": "application/json"})
        assert status == 200


@pytest.mark.parametrize("transport, over_tls", [("xhr", False), ("jsonp", False), ("xhr", True)],
                         ids=["xhr", "jsonp", "xhr-over-tls"])
def test_a_poll_answer_nobody_reads_is_cut_within_the_write_timeout(start_broker, tls_files, transport,
                                                                     over_tls):
    if over_tls:
        broker = start_broker(*FLAGS, "--certfile", tls_files.certfile, "--keyfile", tls_files.keyfile)
        broker.tls = tls_files.client_context()
    else:
        broker = start_broker(*FLAGS)
    path = urllib.parse.urlsplit(session_url(broker.url)).path
    assert opened(poll(broker, path, transport, keep_alive=False))
    publish(broker)
    with WebSocketClient(broker.url, tls=broker.tls) as canary:
        before = broker.stats()
        assert before["sessions"] == 2  # the poller's and the canary's
        # Kept alive over TLS: every poll there is Tornado's to write.
        stalled = poll(broker, path, transport, keep_alive=over_tls, receive_buffer=4096)
        try:
            assert wait_until(lambda: unread_bytes(stalled) > 0)  # its answer is on its way
            sent = 0

            def let_go():
                nonlocal sent
                sent += 1
                canary.send("canary %d" % sent)
                assert canary.receive() == ["canary %d" % sent]
                stats = broker.stats()
                return stats["sessions"] == 1 and stats["tcp_connections"] == before["tcp_connections"]

            assert wait_until(let_go, timeout=CUT_WITHIN, interval=0.2)
        finally:
            stalled.close()


def read_answer(sock, pace=None):
    """The body of the HTTP answer on ``sock`` (its length given): read 16 KiB at a time, with
    ``pace`` seconds between reads if given."""
    data = b""
    while b"\r\n\r\n" not in data:
        data += sock.recv(16384)
    head, _, body = data.partition(b"\r\n\r\n")
    length = int(next(line.split(b":")[1] for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")))
    while len(body) < length:
        if pace is not None:
            time.sleep(pace)
        chunk = sock.recv(16384)
        assert chunk, "the answer ended after %d of %d bytes" % (len(body), length)
        body += chunk
    return body


def test_a_kept_alive_poll_answer_nobody_reads_is_cut_within_the_write_timeout(start_broker):
    """The second poll of a kept-alive connection is the broker's to write, not Tornado's: its
    answer is held to --write-timeout too, not to the longer wait a counter's values get."""
    broker = start_broker(*FLAGS, "--write-timeout", "3", "--header-timeout", "30")
    path = urllib.parse.urlsplit(session_url(broker.url)).path
    kept = poll(broker, path, "xhr", keep_alive=True, receive_buffer=4096)
    assert read_answer(kept) == b"o\n"
    publish(broker)
    with WebSocketClient(broker.url) as canary:
        before = broker.stats()
        started = time.monotonic()
        kept.sendall(b"POST %s/xhr HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % path.encode())
        try:
            assert wait_until(lambda: unread_bytes(kept) > 0)
            assert wait_until(lambda: broker.stats()["sessions"] == 1 and (
                broker.stats()["tcp_connections"] == before["tcp_connections"] - 1), timeout=CUT_WITHIN, interval=0.2)
            # Within the write timeout and the sweep's second, not four write timeouts.
            assert time.monotonic() - started < 4 * 3, time.monotonic() - started
            canary.send("after")
            assert canary.receive() == ["after"]
        finally:
            kept.close()


def test_a_slow_reader_gets_its_whole_answer_when_it_takes_it_within_the_write_timeout(start_broker):
    """The wait for a kept-alive connection's next request starts when its answer is written,
    not when it is queued: a reader slower than --header-timeout, well within --write-timeout,
    gets all of it."""
    broker = start_broker("--write-timeout", "30", "--header-timeout", "1", "--replay", "0",
                          "--max-buffer", "4MiB", "--max-message-size", "1MiB", "--publish-token", "t")
    path = urllib.parse.urlsplit(session_url(broker.url)).path
    kept = poll(broker, path, "xhr", keep_alive=True, receive_buffer=4096)
    try:
        assert read_answer(kept) == b"o\n"
        status, _ = broker.request("POST", "/publish", json.dumps("y" * 400000).encode(),
                                   {"Authorization": "Bearer t", "Content-Type": "application/json"})
        assert status == 200
        kept.sendall(b"POST %s/xhr HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n" % path.encode())
        started = time.monotonic()
        body = read_answer(kept, pace=0.1)  # about 160 KB/s: 2.5 s
        assert body == b'a["%s"]\n' % (b"y" * 400000)
        assert time.monotonic() - started > 1.5  # slower than the header timeout
    finally:
        kept.close()
