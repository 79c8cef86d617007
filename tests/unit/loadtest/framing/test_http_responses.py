"""HTTP/1.1 responses parsed as they come: heads, body pieces and ends, whatever the reads' sizes."""

import pytest

from loadtest.framing.http_head import HTTPError
from loadtest.framing.http_responses import LAST, REUSABLE, Head, ResponseParser


def parse(*reads, eof=False):
    """The events of ``reads`` (and of the close, if ``eof``), the body pieces joined between other events."""
    parser = ResponseParser()
    events = []
    for data in reads:
        events += parser.feed(data)
    if eof:
        events += parser.feed_eof()
    joined = []
    for event in events:
        if type(event) is bytes and joined and type(joined[-1]) is bytes:
            joined[-1] += event
        else:
            joined.append(event)
    return joined


def bytewise(data):
    return [data[i:i + 1] for i in range(len(data))]


CHUNKED = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nh\no\r\n2;x=1\r\na\n\r\n0\r\nX-Trailer: 1\r\n\r\n"
LENGTH = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\no\n!"


@pytest.mark.parametrize("reads", [[CHUNKED], bytewise(CHUNKED), [CHUNKED[:40], CHUNKED[40:55], CHUNKED[55:]]])
def test_a_chunked_body_is_dechunked_whatever_the_reads(reads):
    assert parse(*reads) == [Head(200, {"transfer-encoding": "chunked"}), b"h\noa\n", REUSABLE]


def test_a_body_of_a_given_length_and_the_next_response_on_the_same_connection():
    assert parse(LENGTH + LENGTH) == [Head(200, {"content-length": "3"}), b"o\n!", REUSABLE,
                                      Head(200, {"content-length": "3"}), b"o\n!", REUSABLE]
    assert parse(*bytewise(LENGTH)) == [Head(200, {"content-length": "3"}), b"o\n!", REUSABLE]


def test_a_body_without_length_ends_at_the_close_and_the_connection_with_it():
    events = parse(b"HTTP/1.1 200 OK\r\n\r\nh\n", b"o\n", eof=True)
    assert events == [Head(200, {}), b"h\no\n", LAST]


@pytest.mark.parametrize("head, end", [
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 0", LAST),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 0", LAST),
    (b"HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 0", REUSABLE),
    (b"HTTP/1.1 204 No Content\r\nContent-Type: text/plain", REUSABLE),
    (b"HTTP/1.1 304 Not Modified\r\nContent-Length: 10", REUSABLE),
])
def test_whether_the_connection_carries_another_request(head, end):
    assert parse(head + b"\r\n\r\n")[1:] == [end]


def test_interim_answers_and_stray_line_ends_are_skipped():
    assert parse(b"HTTP/1.1 100 Continue\r\n\r\n" + LENGTH + b"\r\n" + LENGTH)[2:4] == [
        REUSABLE, Head(200, {"content-length": "3"})]


def test_a_close_between_responses_is_no_event():
    parser = ResponseParser()
    assert parser.idle and parser.feed(LENGTH) and parser.idle
    assert parser.feed_eof() == []


@pytest.mark.parametrize("reads, message", [
    ([b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"], "closed inside the response"),
    ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab"], "closed inside the response"),
    ([b"HTTP/1.1 200 OK\r\nCont"], "closed inside the response"),
])
def test_a_close_inside_a_response_is_an_error(reads, message):
    parser = ResponseParser()
    for data in reads:
        parser.feed(data)
    with pytest.raises(HTTPError, match=message):
        parser.feed_eof()


@pytest.mark.parametrize("data, message", [
    (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP response"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", "malformed Content-Length"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", "malformed chunk size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n", "longer than its size"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + b"1" * 2000, "chunk line over"),
    (b"HTTP/1.1 200 OK\r\nX: " + b"x" * 70000, "head over"),
])
def test_what_is_no_http_response_is_named(data, message):
    with pytest.raises(HTTPError, match=message):
        ResponseParser().feed(data)
