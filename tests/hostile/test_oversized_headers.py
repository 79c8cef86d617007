"""Request headers over Tornado's limit (64 KiB) are answered 431 Request Header
Fields Too Large before the connection closes, whether one line is too long or
there are too many lines; the connection is released and others are served. A
body's line over its limit closes the connection without that answer."""

import pytest

from probes import Canary, closed, connect, get, open_fds, read_response, read_to_close
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


def test_a_body_line_over_its_limit_is_not_answered_as_headers_too_large(start_broker):
    # Headers and a chunk-size line over Tornado's 64 bytes in one read: the body's
    # fault closes the connection, with no 431.
    broker = start_broker("--publish-token", "t")
    sock = connect(broker)
    sock.sendall(b"POST /publish HTTP/1.1\r\nHost: broker\r\nAuthorization: Bearer t\r\n"
                 b"Transfer-Encoding: chunked\r\n\r\n" + b"0" * 100 + b"\r\n")
    sock.settimeout(5)
    answer = read_to_close(sock)
    sock.close()
    assert b" 431 " not in answer, answer
    assert get(broker, "/healthz")[0] == 200
