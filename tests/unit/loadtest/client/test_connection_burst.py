"""The requests a burst knocks with: each kind's opening, as a browser's first request of a session."""

import re

import pytest

from loadtest.client import connection_burst
from loadtest.framing.http_head import parse_head

URL = "http://127.0.0.1:8080/broadcast?positions=1"


def request_line_and_headers(data):
    line, _, rest = data.decode("latin-1").partition("\r\n")
    _, headers = parse_head(b"HTTP/1.1 200 OK\r\n" + rest.encode("latin-1").split(b"\r\n\r\n")[0])
    return line, headers


@pytest.mark.parametrize("kind, line", [
    ("websocket", r"GET /broadcast/\d{3}/[a-z0-9]{12}/websocket\?positions=1 HTTP/1.1"),
    ("info", r"GET /broadcast/info\?positions=1 HTTP/1.1"),
    ("xhr", r"POST /broadcast/\d{3}/[a-z0-9]{12}/xhr\?positions=1 HTTP/1.1"),
    ("xhr_streaming", r"POST /broadcast/\d{3}/[a-z0-9]{12}/xhr_streaming\?positions=1 HTTP/1.1"),
])
def test_each_kind_opens_a_new_session_on_its_path(kind, line):
    request, headers = request_line_and_headers(connection_burst.opening_request(URL, kind))
    assert re.fullmatch(line, request), request
    assert headers["host"] == "127.0.0.1:8080"
    if kind == "websocket":
        assert headers["upgrade"] == "websocket" and headers["sec-websocket-version"] == "13"
    else:
        assert headers["content-length"] == "0" and headers["connection"] == "close"


def test_every_attempt_is_a_new_session():
    assert connection_burst.opening_request(URL, "xhr") != connection_burst.opening_request(URL, "xhr")
