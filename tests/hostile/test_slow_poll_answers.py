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
