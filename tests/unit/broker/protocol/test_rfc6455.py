"""The server's side of RFC 6455 without sockets: handshake answers and client frames."""

import struct

import pytest
from tornado.httputil import HTTPHeaders

from broker.protocol import rfc6455
from loadtest.framing.websocket_frames import client_frame

UPGRADE = {"Host": "example.com", "Upgrade": "websocket", "Connection": "keep-alive, Upgrade",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Version": "13"}


def events(*chunks, max_size=1024, budget=1 << 20):
    protocol = rfc6455.ServerProtocol(max_size)
    out = []
    for chunk in chunks:
        protocol.receive_data(chunk)
        out += protocol.events_received(budget)
    return out


def frame(payload, opcode=rfc6455.TEXT, final=True):
    """A masked client frame; ``final`` False makes it a fragment."""
    data = bytearray(client_frame(payload, opcode))
    if not final:
        data[0] &= 0x7F
    return bytes(data)


def test_the_accept_value_is_the_rfcs_example():
    assert rfc6455.accept_value("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_a_complete_upgrade_is_accepted():
    assert rfc6455.handshake_refusal(HTTPHeaders(UPGRADE)) is None


@pytest.mark.parametrize("change, status, body", [
    ({"Upgrade": "h2c"}, 400, 'Can "Upgrade" only to "WebSocket".'),
    ({"Connection": "keep-alive"}, 400, '"Connection" must be "Upgrade".'),
    ({"Sec-WebSocket-Version": "8"}, 426, ""),
    ({"Sec-WebSocket-Key": ""}, 400, "Missing/Invalid WebSocket headers"),
])
def test_a_broken_upgrade_is_refused_with_the_reason(change, status, body):
    refusal = rfc6455.handshake_refusal(HTTPHeaders(dict(UPGRADE, **change)))
    assert refusal[:2] == (status, body)


def test_text_and_binary_messages_arrive_whole_across_reads():
    data = frame("héllo".encode()) + frame(b"\x00\x01", rfc6455.BINARY) + frame(b"x" * 300)
    assert events(data[:1], data[1:7], data[7:]) == [
        (rfc6455.TEXT, "héllo"), (rfc6455.BINARY, b"\x00\x01"), (rfc6455.TEXT, "x" * 300)]


def test_fragments_make_one_message_and_control_frames_may_come_between():
    data = (frame(b"one ", final=False) + frame(b"ping", rfc6455.PING)
            + frame(b"two ", 0x0, final=False) + frame(b"three", 0x0))
    assert events(data) == [(rfc6455.PING, b"ping"), (rfc6455.TEXT, "one two three")]


def test_close_frames_give_their_code_and_reason_and_end_the_parse():
    data = frame(struct.pack("!H", 1001) + b"bye", rfc6455.CLOSE) + frame(b"after")
    assert events(data) == [(rfc6455.CLOSE, (1001, "bye"))]
    assert events(frame(b"", rfc6455.CLOSE)) == [(rfc6455.CLOSE, (rfc6455.NO_STATUS, ""))]


@pytest.mark.parametrize("data, code", [
    pytest.param(b"\x81\x05hello", 1002, id="unmasked"),
    pytest.param(b"\x83\x80abcd", 1002, id="reserved opcode"),
    pytest.param(b"\xc1\x80abcd", 1002, id="RSV1: no extension was agreed"),
    pytest.param(frame(b"ping", rfc6455.PING, final=False), 1002, id="fragmented control frame"),
    pytest.param(frame(b"p" * 126, rfc6455.PING), 1002, id="control frame over 125 bytes"),
    pytest.param(frame(b"tail", 0x0), 1002, id="continuation of nothing"),
    pytest.param(frame(b"a", final=False) + frame(b"b"), 1002, id="new message inside a fragmented one"),
    pytest.param(frame(b"a" * 600, final=False) + frame(b"b" * 600), 1002, id="the same, both under max_size"),
    pytest.param(frame(struct.pack("!H", 999), rfc6455.CLOSE), 1002, id="close code no endpoint may send"),
    pytest.param(frame(b"\x03", rfc6455.CLOSE), 1002, id="a one-byte close payload"),
    pytest.param(frame(b"\xff\xfe"), 1007, id="text that is not UTF-8"),
    pytest.param(frame(struct.pack("!H", 1000) + b"\xff", rfc6455.CLOSE), 1007, id="close reason not UTF-8"),
    pytest.param(frame(b"x" * 1025), 1009, id="over max_size"),
    pytest.param(frame(b"x" * 600, final=False) + frame(b"x" * 600, 0x0), 1009, id="over max_size in fragments"),
])
def test_a_broken_frame_fails_with_its_close_code(data, code):
    got = events(data + frame(b"never parsed"))
    assert got[-1][0] == rfc6455.FAIL and got[-1][1][0] == code, got
    assert all(kind != rfc6455.TEXT or value != "never parsed" for kind, value in got)


def test_empty_fragments_cost_no_memory():
    """A message held open by endless empty continuations keeps one buffer,
    not one entry per fragment."""
    tracemalloc = pytest.importorskip("tracemalloc", reason="PyPy has no tracemalloc")
    protocol = rfc6455.ServerProtocol(1024)
    protocol.receive_data(frame(b"a", final=False))
    empties = frame(b"", 0x0, final=False) * 10000
    tracemalloc.start()
    try:
        for _ in range(5):
            protocol.receive_data(empties)
            assert list(protocol.events_received(1 << 30)) == []
        grown = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert grown < 100 * 1024, "50,000 empty fragments kept %d bytes" % grown
    protocol.receive_data(frame(b"b", 0x0))
    assert list(protocol.events_received(1 << 20)) == [(rfc6455.TEXT, "ab")]


def test_a_long_close_reason_is_cut_at_a_character():
    payload = rfc6455.close_payload(1000, "é" * 100)
    assert len(payload) <= 125
    assert payload[2:].decode("utf-8") == "é" * 61


def test_an_oversized_message_fails_from_its_header_alone():
    header = b"\x81\xff" + struct.pack("!Q", 1 << 62) + b"mask"
    assert events(header) == [(rfc6455.FAIL, (1009, "Message too big"))]


def test_nothing_is_parsed_after_a_failure():
    protocol = rfc6455.ServerProtocol(1024)
    protocol.receive_data(b"\x81\x05hello")
    assert list(protocol.events_received(1 << 20))[0][0] == rfc6455.FAIL
    protocol.receive_data(frame(b"late"))
    assert list(protocol.events_received(1 << 20)) == [] and protocol.buffered == 0


def test_the_budget_bounds_the_frames_parsed_per_call():
    protocol = rfc6455.ServerProtocol(1024)
    protocol.receive_data(frame(b"") * 100)
    first = list(protocol.events_received(10 * rfc6455.FRAME_COST))
    assert len(first) == 10 and protocol.more
    rest = list(protocol.events_received(1 << 20))
    assert len(rest) == 90 and not protocol.more
    assert rest[0] == (rfc6455.TEXT, "")


# Fail fast (RFC 6455 section 8.1): what the bytes so far already break fails
# before the rest arrives; the last chunk of each case is never needed.
INVALID_CODE_POINT = b"\xf4\x90\x80\x80"  # U+110000, outside Unicode


@pytest.mark.parametrize("chunks, code", [
    # a fragment that makes the text invalid, before the message's last fragment
    ([frame(b"\xce\xba\xe1\xbd\xb9", final=False), frame(INVALID_CODE_POINT, 0x0, final=False),
      frame(b"edited", 0x0)], 1007),
    # a frame still arriving whose received part cannot begin UTF-8
    ([frame(b"valid" + INVALID_CODE_POINT + b"rest")[:2 + 4 + 5 + 4], b"rest"], 1007),
    # out of order, from its header alone
    ([frame(b"tail" * 100, 0x0)[:4], b"..."], 1002),
    ([frame(b"a", final=False) + frame(b"b" * 300)[:4], b"..."], 1002),
])
def test_a_broken_message_fails_before_it_is_complete(chunks, code):
    got = events(*chunks[:-1])
    assert got == [(rfc6455.FAIL, (code, got[-1][1][1]))], got


def test_text_checked_while_it_arrives_is_the_same_message():
    """A text frame split at every byte, multi-byte characters across the
    splits and the mask's turns, in two fragments: one message, unchanged."""
    text = "ascii, é, 漢字, 🎉 " * 20
    data = frame(text[:50].encode(), final=False) + frame(text[50:].encode(), 0x0)
    assert events(*(data[i:i + 1] for i in range(len(data)))) == [(rfc6455.TEXT, text)]


def test_empty_text_messages_are_messages():
    assert events(frame(b"") + frame(b"", final=False) + frame(b"", 0x0)) == [
        (rfc6455.TEXT, ""), (rfc6455.TEXT, "")]
