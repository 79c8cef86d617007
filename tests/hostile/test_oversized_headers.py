"""Request headers over Tornado's limit (64 KiB) are answered 431 Request Header
Fields Too Large before the connection closes, whether one line is too long or
there are too many lines; the connection is released and others are served."""

import pytest

from probes import Canary, closed, connect, get, open_fds, read_response
from sockjs_clients import wait_until


@pytest.mark.parametrize("headers", [
    b"X-Long: " + b"a" * (70 << 10) + b"\r\n",
    b"".join(b"X-Many-%d: %s\r\n" % (i, b"b" * 40) for i in range(2000)),
], ids=["one long line", "many lines"])
def test_oversized_headers_are_answered_431(start_broker, headers):
    broker = start_broker()
    with Canary(broker) as canary:
        fds = open_fds(broker.server.pid)
        sock = connect(broker)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: broker\r\n" + headers + b"\r\n")
        status, response_headers, body = read_response(sock)
        assert status == 431 and "Connection: close" in response_headers
        assert "too large" in body
        wait_until(lambda: closed(sock))
        sock.close()
        wait_until(lambda: open_fds(broker.server.pid) <= fds)
        canary.round_trip()
        assert get(broker, "/healthz")[0] == 200
        assert broker.stats()["tcp_connections"] == 2
