"""A send read from a connection's bytes: one the broker takes and answers, or anything else, Tornado's."""

import pytest

from broker.protocol.request_heads import RequestHead, read_head, session_path
from broker.protocol.sends import Send, jsonp_payload, messages_of, send_answer, send_of

PREFIX = "/broadcast"
MAX_SIZE = 1024
DATE = "Thu, 26 Nov 2026 15:25:30 GMT"


def request(body=b'["hi"]', suffix=b"xhr_send", *headers, length=None, method=b"POST"):
    head = [method + b" /broadcast/000/abc123/" + suffix + b" HTTP/1.1", b"Host: 127.0.0.1:8080",
            b"Content-Length: %d" % (len(body) if length is None else length), *headers]
    return b"\r\n".join(head) + b"\r\n\r\n" + body


def parse_send(data, client_header=None):
    head = read_head(data, client_header)
    return None if head is None else send_of(head, data, PREFIX, MAX_SIZE)


def test_a_browser_send_is_read_with_its_messages_and_the_bytes_it_takes():
    data = request(b'["hi",{"n":1}]', b"xhr_send", b"Origin: https://example.com", b"Content-Type: text/plain")
    assert parse_send(data + b"POST /next") == Send("xhr_send", "abc123", len(data), ["hi", {"n": 1}],
                                                    "https://example.com", "127.0.0.1:8080")


def test_a_jsonp_send_is_read_from_its_form_or_its_body():
    form = request(b"d=%5B%22hi%22%5D", b"jsonp_send", b"Content-Type: application/x-www-form-urlencoded")
    assert parse_send(form).messages == ["hi"]
    assert parse_send(form).transport == "jsonp_send"
    assert parse_send(request(b'["hi"]', b"jsonp_send")).messages == ["hi"]
    assert jsonp_payload(b"x=1", "application/x-www-form-urlencoded; charset=UTF-8") is None
    assert jsonp_payload(b"d=a+b", "Application/X-WWW-Form-Urlencoded") == b"a b"


def test_a_proxy_s_send_names_its_client():
    data = request(b'["hi"]', b"xhr_send", b"X-Forwarded-For: 6.6.6.6")
    assert parse_send(data, b"x-forwarded-for").named_client == "6.6.6.6"


@pytest.mark.parametrize("data", [
    request()[:-1],  # the body not yet whole
    request(b'["hi"]', b"xhr_send", b"Content-Length: 6"),  # twice
    request(b'["hi"]', b"xhr_send", length=0),
    request(b""),  # Tornado answers "Payload expected."
    request(b'{"a": 1}'),  # not an array: "Payload expected."
    request(b'["hi"'),  # "Broken JSON encoding."
    request(b'["\xff"]'),
    request(b"x=1", b"jsonp_send", b"Content-Type: application/x-www-form-urlencoded"),
    request(b'["' + b"x" * MAX_SIZE + b'"]'),  # over the limit: Tornado closes the session
    request(b'["hi"]', b"xhr"),
    request(b'["hi"]', b"xhr_send", method=b"PUT"),
    request(b'["hi"]', b"xhr_send", b"Expect: 100-continue"),
    request(b'["hi"]', b"xhr_send", b"Transfer-Encoding: chunked"),
    request(b'["hi"]', b"xhr_send", b"Connection: close"),
], ids=lambda data: repr(data[-50:]))
def test_anything_else_is_not_a_send(data):
    assert parse_send(data) is None


@pytest.mark.parametrize("payload, answer", [
    (None, "Payload expected."),
    (b"", "Payload expected."),
    (b'{"a": 1}', "Payload expected."),
    (b'["hi"', "Broken JSON encoding."),
    (b'["\xff"]', "Broken JSON encoding."),
])
def test_a_payload_without_messages_names_tornado_s_answer(payload, answer):
    with pytest.raises(ValueError, match=answer):
        messages_of(payload)


def test_a_content_length_is_digits_only():
    for value in (b"+6", b"6 6", b"0x6", b"-1", b""):
        data = (b"POST /broadcast/000/abc123/xhr_send HTTP/1.1\r\nHost: h\r\nContent-Length: " + value +
                b"\r\n\r\n[]")
        assert read_head(data) is None, value


def test_a_head_is_read_with_what_an_answer_needs():
    data = request(b'["hi"]', b"xhr_send", b"Content-Type: text/plain;charset=UTF-8", b"Origin: null")
    assert read_head(data) == RequestHead(b"POST", b"/broadcast/000/abc123/xhr_send", len(data) - 6, 6,
                                   "text/plain;charset=UTF-8", "null", "127.0.0.1:8080", None)


@pytest.mark.parametrize("target, expected", [
    (b"/broadcast/000/abc123/xhr_send", ("abc123", "")),
    (b"/broadcast/000/abc123/xhr_send?t=1", ("abc123", "t=1")),
    (b"/broadcast/000/abc%31/xhr_send", None),
    (b"/other/000/abc123/xhr_send", None),
    (b"/broadcast/000/abc.123/xhr_send", None),
    (b"/broadcast//abc123/xhr_send", None),
    (b"/broadcast/000/abc123/xhr", None),
])
def test_a_session_path_is_the_router_s(target, expected):
    assert session_path(target, PREFIX, "xhr_send") == expected


def test_the_answers_are_tornado_s_without_its_server_header():
    xhr = Send("xhr_send", "abc123", 100, ["hi"], None, "127.0.0.1:8080")
    assert send_answer(xhr, DATE) == (b"HTTP/1.1 204 No Content\r\n"
                                      b"Date: Thu, 26 Nov 2026 15:25:30 GMT\r\n"
                                      b"Vary: Origin\r\n"
                                      b"Access-Control-Allow-Origin: *\r\n"
                                      b"Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
                                      b"Content-Type: text/plain; charset=UTF-8\r\n"
                                      b"\r\n")
    jsonp = Send("jsonp_send", "abc123", 100, ["hi"], "https://example.com", "127.0.0.1:8080")
    assert send_answer(jsonp, DATE) == (b"HTTP/1.1 200 OK\r\n"
                                        b"Content-Type: text/plain; charset=UTF-8\r\n"
                                        b"Date: Thu, 26 Nov 2026 15:25:30 GMT\r\n"
                                        b"Vary: Origin\r\n"
                                        b"Access-Control-Allow-Origin: https://example.com\r\n"
                                        b"Access-Control-Allow-Credentials: true\r\n"
                                        b"Cache-Control: no-store, no-cache, no-transform, must-revalidate, max-age=0\r\n"
                                        b"Content-Length: 2\r\n"
                                        b"\r\n"
                                        b"ok")
    assert send_answer(xhr, DATE, taken=False) == (b"HTTP/1.1 413 Request Entity Too Large\r\n"
                                                   b"Content-Type: text/plain; charset=UTF-8\r\n"
                                                   b"Date: Thu, 26 Nov 2026 15:25:30 GMT\r\n"
                                                   b"Vary: Origin\r\n"
                                                   b"Access-Control-Allow-Origin: *\r\n"
                                                   b"Cache-Control: no-store, no-cache, no-transform, must-revalidate, "
                                                   b"max-age=0\r\n"
                                                   b"Content-Length: 16\r\n"
                                                   b"\r\n"
                                                   b"Message too big.")
