"""A kept-alive connection's next request: a poll the broker answers, or anything else, Tornado's."""

import pytest

from broker.protocol.polls import Poll, poll_answer, poll_of
from broker.protocol.request_heads import read_head

PREFIX = "/broadcast"


def parse_poll(data, prefix, client_header=None):
    """The poll ``data`` begins with, as a kept-alive connection reads it."""
    head = read_head(data, client_header)
    return None if head is None else poll_of(head, prefix)


def request(target=b"/broadcast/000/abc123/xhr", *headers, line_end=b"\r\n", version=b"HTTP/1.1",
            method=b"POST"):
    head = [method + b" " + target + b" " + version, b"Host: 127.0.0.1:8080", *headers]
    return line_end.join(head) + line_end + line_end


def test_a_browser_poll_is_read_with_its_origin_and_its_length():
    data = request(b"/broadcast/000/abc123/xhr", b"Content-Length: 0", b"Origin: https://example.com",
                   b"Connection: keep-alive", b"Accept: */*")
    assert parse_poll(data + b"POST /next", PREFIX) == Poll("xhr", "abc123", len(data), "https://example.com",
                                                            "127.0.0.1:8080")


def test_a_tab_in_a_header_is_allowed():
    data = request(b"/broadcast/000/abc123/xhr", b"Origin:\thttps://example.com\t")
    assert parse_poll(data, PREFIX).origin == "https://example.com"


def test_a_poll_without_an_origin_or_a_length_is_a_poll():
    data = request()
    assert parse_poll(data, PREFIX) == Poll("xhr", "abc123", len(data), None, "127.0.0.1:8080")


def test_a_jsonp_poll_is_read_with_its_callback():
    data = request(b"/broadcast/000/abc123/jsonp?c=_jp.a1b2", method=b"GET")
    assert parse_poll(data, PREFIX) == Poll("jsonp", "abc123", len(data), None, "127.0.0.1:8080", "_jp.a1b2")


@pytest.mark.parametrize("target, callback", [
    (b"/broadcast/000/abc123/xhr?positions=1&epoch=oElpTaWI&since=1795739480688-0", None),
    (b"/broadcast/000/abc123/xhr?t=1", None),
    (b"/broadcast/000/abc123/jsonp?positions=1&c=_jp.a1b2", "_jp.a1b2"),
    (b"/broadcast/000/abc123/jsonp?c=cb&t=1", "cb"),
    (b"/broadcast/000/abc123/jsonp?c=first&c=last", "last"),
])
def test_a_poll_with_a_query_is_a_poll_of_its_callback_alone(target, callback):
    """The shipped client puts its positions on every request's URL: a poll of an open
    session reads only jsonp's callback, the last ``c`` as Tornado takes it."""
    data = request(target, method=b"GET" if b"jsonp" in target else b"POST")
    poll = parse_poll(data, PREFIX)
    assert (poll.session_id, poll.callback) == ("abc123", callback)


@pytest.mark.parametrize("data", [
    request()[:-1],  # the head not yet whole
    request(line_end=b"\n"),
    request(version=b"HTTP/1.0"),
    request(method=b"GET"),
    request(method=b"PUT"),
    request(b"/broadcast/000/abc123/jsonp", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?c=", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?c=alert(1)", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?c=a%2Eb", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?c=cb&c=", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?positions=1", method=b"GET"),
    request(b"/broadcast/000/abc123/jsonp?c=cb"),
    request(b"/broadcast/000/abc123/xhr_send"),
    request(b"/broadcast/000/abc123/xhr?since=1%2D0"),
    request(b"/broadcast/000/ab%41/xhr"),
    request(b"/broadcast/000/a.b/xhr"),
    request(b"/broadcast/000//xhr"),
    request(b"/other/000/abc123/xhr"),
    request(b"/000/abc123/xhr"),
    request(b"/broadcast/x/000/abc123/xhr"),
    request(b"/broadcast/000/abc123/xhr", b"Content-Length: 5"),
    request(b"/broadcast/000/abc123/xhr", b"Transfer-Encoding: chunked"),
    request(b"/broadcast/000/abc123/xhr", b"Expect: 100-continue"),
    request(b"/broadcast/000/abc123/xhr", b"Connection: Close"),
    request(b"/broadcast/000/abc123/xhr", b"Upgrade: websocket"),
    request(b"/broadcast/000/abc123/xhr", b"Access-Control-Request-Headers: x-a"),
    request(b"/broadcast/000/abc123/xhr", b"Origin: https://a.example", b"Origin: https://b.example"),
    request(b"/broadcast/000/abc123/xhr", b"Origin: https://a.example", b" folded"),
    request(b"/broadcast/000/abc123/xhr", b"Origin : https://a.example"),
    request(b"/broadcast/000/abc123/xhr", b"Origin: https://a.example\rX-Injected: 1"),
    request(b"/broadcast/000/abc123/xhr", b"no colon"),
    request(b"/broadcast/000/abc123/xhr", b"Origin: https://a.example\x0bX"),
    request(b"/broadcast/000/abc123/xhr", b"Origin: https://a.example\x7f"),
    request(b"/broadcast/000/abc123/xhr", b"Accept: \x00"),
    request(b"/broadcast/000/abc123/xhr", b"Content-Length: 2"),
    request(b"/broadcast/000/abc123/xhr", b"Connection: close"),
], ids=lambda data: repr(data[-40:]))
def test_anything_else_is_not_a_poll(data):
    assert parse_poll(data, PREFIX) is None


def test_a_poll_without_a_host_or_with_two_is_not_a_poll():
    # Tornado answers it: the origin policy compares an Origin with the Host.
    assert parse_poll(b"POST /broadcast/000/abc123/xhr HTTP/1.1\r\nOrigin: https://a.example\r\n\r\n",
                      PREFIX) is None
    assert parse_poll(request(b"/broadcast/000/abc123/xhr", b"Host: other.example"), PREFIX) is None


def test_a_head_longer_than_any_poll_is_not_read_to_its_end():
    assert parse_poll(request(b"/broadcast/000/abc123/xhr", b"Cookie: " + b"x" * 9000), PREFIX) is None


def test_the_answer_is_tornado_s_without_its_server_header():
    poll = Poll("xhr", "abc123", 100, None, "127.0.0.1:8080")
    answer = poll_answer(poll, 'a["hi"]', "Thu, 26 Nov 2026 15:25:30 GMT")
    assert answer == (b"HTTP/1.1 200 OK\r\n"
                      b"Content-Type: application/javascript; charset=UTF-8\r\n"
                      b"Date: Thu, 26 Nov 2026 15:25:30 GMT\r\n"
                      b"Vary: Origin\r\n"
                      b"Access-Control-Allow-Origin: *\r\n"
                      b"Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
                      b"Content-Length: 8\r\n"
                      b"\r\n"
                      b'a["hi"]\n')


def test_a_jsonp_answer_is_a_script_that_no_message_can_end():
    poll = Poll("jsonp", "abc123", 100, "https://example.com", "127.0.0.1:8080", "_jp.a1b2")
    answer = poll_answer(poll, 'a["</script>"]', "Thu, 26 Nov 2026 15:25:30 GMT")
    body = b'/**/_jp.a1b2("a[\\"<\\/script>\\"]");\r\n'
    assert answer == (b"HTTP/1.1 200 OK\r\n"
                      b"Content-Type: application/javascript; charset=UTF-8\r\n"
                      b"Date: Thu, 26 Nov 2026 15:25:30 GMT\r\n"
                      b"Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
                      b"X-Content-Type-Options: nosniff\r\n"
                      b"Content-Length: %d\r\n"
                      b"\r\n" % len(body)) + body


def test_a_proxy_s_poll_names_its_client_once():
    data = request(b"/broadcast/000/abc123/xhr", b"X-Forwarded-For: 6.6.6.6, 10.0.0.1")
    assert parse_poll(data, PREFIX, b"x-forwarded-for").named_client == "6.6.6.6, 10.0.0.1"
    assert parse_poll(data, PREFIX).named_client is None
    twice = request(b"/broadcast/000/abc123/xhr", b"X-Forwarded-For: 10.0.0.1", b"x-forwarded-for: 10.0.0.2")
    assert parse_poll(twice, PREFIX, b"x-forwarded-for") is None
