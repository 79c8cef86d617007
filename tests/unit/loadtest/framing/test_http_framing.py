"""Each SockJS HTTP transport's requests, and its frames found in bodies read in any pieces."""

import json
import urllib.parse

import pytest

from broker.protocol.frames import script_string
from loadtest.framing import endpoints, http_framing
from loadtest.framing.http_head import HTTPError

SESSION = "/broadcast/000/abc"
FRAMES = [b"o", b"h", b'a["7:1:1000","<&>\\u2028"]', b'c[3000,"Go away!"]']


def body(transport):
    """What the broker's handler of ``transport`` writes for FRAMES, prelude first."""
    if transport in ("xhr-streaming", "xhr-polling"):
        return (b"h" * 2048 + b"\n" if transport == "xhr-streaming" else b"") + b"".join(f + b"\n" for f in FRAMES)
    if transport == "eventsource":
        return b"\r\n" + b"".join(b"data: " + f + b"\r\n\r\n" for f in FRAMES)
    literals = [script_string(f.decode()).encode() for f in FRAMES]
    if transport == "htmlfile":
        prelude = b"<!doctype html>\n<script>\n  function p(d) {c.message(d);};\n</script>" + b" " * 1024 + b"\r\n\r\n"
        return prelude + b"".join(b"<script>\np(" + literal + b");\n</script>\r\n" for literal in literals)
    callback = http_framing.CALLBACK.encode()
    return b"".join((b"/**/" if i % 2 else b"") + callback + b"(" + literal + b");\r\n"
                    for i, literal in enumerate(literals))


def frames_of(transport, pieces):
    splitter = http_framing.HTTP[transport].frames()
    found = []
    for piece in pieces:
        found += [buffer[start:end] for buffer, start, end in splitter.frames(piece)]
    return found + [buffer[start:end] for buffer, start, end in splitter.finish()]


@pytest.mark.parametrize("transport", endpoints.HTTP_TRANSPORTS)
@pytest.mark.parametrize("size", [1, 7, 100000])
def test_every_transport_yields_the_frames_whatever_the_pieces(transport, size):
    data = body(transport)
    found = frames_of(transport, [data[i:i + size] for i in range(0, len(data), size)])
    assert [frame for frame in found if not frame.startswith(b"hh")] == FRAMES  # xhr-streaming's prelude is a line of h


def test_xhr_and_eventsource_frames_are_offsets_into_the_read_not_copies():
    read = b"data: a[\"1:1:1\"]\r\n\r\n"
    ((buffer, start, end),) = http_framing.HTTP["eventsource"].frames().frames(read)
    assert buffer is read and read[start:end] == b'a["1:1:1"]'
    read = b'a["1:1:1"]\n'
    ((buffer, start, end),) = http_framing.HTTP["xhr-streaming"].frames().frames(read)
    assert buffer is read and (start, end) == (0, len(read) - 1)


def test_a_last_line_without_its_end_is_still_a_frame():
    splitter = http_framing.HTTP["xhr-polling"].frames()
    assert splitter.frames(b"o") == [] and [b[s:e] for b, s, e in splitter.finish()] == [b"o"]
    assert splitter.finish() == []


@pytest.mark.parametrize("transport, line, message", [
    ("htmlfile", b"p(nope);\n", "no call with a string"),
    ("jsonp-polling", http_framing.CALLBACK.encode() + b"(1);\r\n", "no call with a string"),
])
def test_a_script_that_is_no_frame_is_an_error(transport, line, message):
    with pytest.raises(HTTPError, match=message):
        http_framing.HTTP[transport].frames().frames(line)


def test_an_endless_line_is_an_error(monkeypatch):
    monkeypatch.setattr(http_framing, "MAX_LINE_BYTES", 10)
    with pytest.raises(HTTPError, match="a line over 10 bytes"):
        http_framing.LineFrames().frames(b"a" * 11)


@pytest.mark.parametrize("transport, request_line", [
    ("xhr-streaming", b"POST /broadcast/000/abc/xhr_streaming HTTP/1.1\r\nHost: h:1\r\nContent-Length: 0\r\n\r\n"),
    ("eventsource", b"GET /broadcast/000/abc/eventsource HTTP/1.1\r\nHost: h:1\r\n\r\n"),
    ("htmlfile", b"GET /broadcast/000/abc/htmlfile?c=_sockjs_load HTTP/1.1\r\nHost: h:1\r\n\r\n"),
    ("xhr-polling", b"POST /broadcast/000/abc/xhr HTTP/1.1\r\nHost: h:1\r\nContent-Length: 0\r\n\r\n"),
    ("jsonp-polling", b"GET /broadcast/000/abc/jsonp?c=_sockjs_load HTTP/1.1\r\nHost: h:1\r\n\r\n"),
])
def test_the_receiving_request_is_the_browsers(transport, request_line):
    assert http_framing.HTTP[transport].receive_request("h:1", SESSION) == request_line


def test_sends_carry_a_json_array_as_text_or_in_a_form():
    head, _, body = http_framing.HTTP["xhr-polling"].send_request("h:1", SESSION, [b"7:1:5", b"7:2:6"]).partition(
        b"\r\n\r\n")
    assert head.startswith(b"POST /broadcast/000/abc/xhr_send HTTP/1.1\r\nHost: h:1\r\n")
    assert b"Content-Type: text/plain;charset=UTF-8" in head and b"Content-Length: %d" % len(body) in head
    assert json.loads(body) == ["7:1:5", "7:2:6"]
    head, _, body = http_framing.HTTP["jsonp-polling"].send_request("h:1", SESSION, [b"7:1:5"]).partition(b"\r\n\r\n")
    assert head.startswith(b"POST /broadcast/000/abc/jsonp_send HTTP/1.1\r\n")
    assert b"Content-Type: application/x-www-form-urlencoded" in head
    assert json.loads(urllib.parse.parse_qs(body.decode())["d"][0]) == ["7:1:5"]
