"""The server's side of RFC 6455 without sockets: the close handshake, pings and pongs,
what the protocol answers and when it is due."""

import struct

import pytest

from broker.protocol import rfc6455
from loadtest.framing.websocket_frames import (OP_BINARY, OP_CLOSE, OP_CONTINUATION, OP_PING, OP_PONG, OP_TEXT,
                                               client_frame, parse_frames)


def server_frames(data):
    """``[(opcode, payload)]`` of the server's frames in ``data`` (bytes), which must be whole."""
    found, consumed = parse_frames(data)
    assert consumed == len(data), data
    return [(opcode, bytes(data[start:end])) for opcode, _, start, end in found]


def fragment(payload, opcode=OP_TEXT):
    """A masked client frame that is not its message's last."""
    data = bytearray(client_frame(payload, opcode))
    data[0] &= 0x7F
    return bytes(data)


def close_frame(code, reason=b""):
    return client_frame(struct.pack("!H", code) + reason, OP_CLOSE)


def taken(protocol, *frames, behind=False):
    """Feed the client's ``frames``, take every event, and return the events
    and what is then due: the frames of ``data_to_send`` and of ``close_to_send``."""
    protocol.receive_data(b"".join(frames))
    events = list(protocol.events_received(1 << 20))
    return events, sent(protocol, behind)


def sent(protocol, behind=False):
    data = b"".join(protocol.data_to_send(behind))
    close = protocol.close_to_send()
    return server_frames(data + (close or b""))


@pytest.fixture
def protocol():
    return rfc6455.ServerProtocol(1024)


# Closing, client first.

def test_a_client_close_is_answered_with_its_code_without_its_reason(protocol):
    events, due = taken(protocol, close_frame(1001, b"going away"))
    assert events == [(rfc6455.CLOSE, (1001, "going away"))]
    assert due == [(OP_CLOSE, struct.pack("!H", 1001))]
    assert protocol.state == rfc6455.CLOSED and protocol.ended == rfc6455.CLOSE


def test_a_close_without_a_code_is_answered_without_one(protocol):
    events, due = taken(protocol, client_frame(b"", OP_CLOSE))
    assert events == [(rfc6455.CLOSE, (rfc6455.NO_STATUS, ""))]
    assert due == [(OP_CLOSE, b"")]


@pytest.mark.parametrize("payload, code", [
    pytest.param(struct.pack("!H", 999), 1002, id="a code below the range"),
    pytest.param(struct.pack("!H", 1005), 1002, id="1005: no endpoint sends it"),
    pytest.param(struct.pack("!H", 1006), 1002, id="1006: no endpoint sends it"),
    pytest.param(struct.pack("!H", 1015), 1002, id="1015: no endpoint sends it"),
    pytest.param(struct.pack("!H", 2999), 1002, id="a code no one may register"),
    pytest.param(struct.pack("!H", 5000), 1002, id="a code above the range"),
    pytest.param(b"\x03", 1002, id="a payload of one byte"),
    pytest.param(struct.pack("!H", 1000) + b"x" * 124, 1002, id="a reason over 123 bytes"),
    pytest.param(struct.pack("!H", 1000) + b"\xff", 1007, id="a reason that is not UTF-8"),
])
def test_a_broken_close_frame_is_answered_with_the_failures_code(protocol, payload, code):
    events, due = taken(protocol, client_frame(payload, OP_CLOSE))
    assert [kind for kind, _ in events] == [rfc6455.FAIL] and events[0][1][0] == code
    assert due == [(OP_CLOSE, rfc6455.close_payload(*events[0][1]))]
    assert protocol.ended == rfc6455.FAIL and protocol.state == rfc6455.CLOSED


@pytest.mark.parametrize("code", [1000, 1001, 1003, 1007, 1011, 1014, 3000, 4999])
def test_every_code_an_endpoint_may_send_is_echoed(protocol, code):
    assert taken(protocol, close_frame(code))[1] == [(OP_CLOSE, struct.pack("!H", code))]


def test_a_broken_frame_is_answered_with_its_code_and_reason(protocol):
    events, due = taken(protocol, client_frame(b"\xff\xfe"))
    assert events == [(rfc6455.FAIL, tuple(rfc6455.INVALID_UTF8))]
    assert due == [(OP_CLOSE, struct.pack("!H", 1007) + b"Invalid UTF-8")]


def test_nothing_after_the_clients_close_is_parsed_answered_or_sent(protocol):
    events, due = taken(protocol, close_frame(1000), client_frame(b"late", OP_PING), client_frame(b"text"))
    assert [kind for kind, _ in events] == [rfc6455.CLOSE] and len(due) == 1
    events, due = taken(protocol, client_frame(b"later", OP_PING), close_frame(1001))
    assert events == [] and due == [] and protocol.buffered == 0
    protocol.send_close(1011, "too late")
    protocol.send_ping()
    assert sent(protocol) == []


# Closing, server first.

def test_a_server_close_is_sent_once_and_the_clients_answer_ends_it(protocol):
    protocol.send_close(3000, "Go away!")
    assert protocol.state == rfc6455.CLOSING and protocol.ended is None
    protocol.send_close(1000)
    assert sent(protocol) == [(OP_CLOSE, struct.pack("!H", 3000) + b"Go away!")]
    events, due = taken(protocol, close_frame(3000))
    assert events == [(rfc6455.CLOSE, (3000, ""))] and due == []
    assert protocol.state == rfc6455.CLOSED and protocol.ended == rfc6455.CLOSE


def test_a_broken_frame_after_the_servers_close_is_not_answered_again(protocol):
    protocol.send_close(1003, "Text frames only")
    sent(protocol)
    events, due = taken(protocol, b"\x81\x05hello")
    assert events[0][0] == rfc6455.FAIL and due == []
    assert protocol.ended == rfc6455.FAIL


def test_a_servers_reason_over_123_bytes_is_cut_to_fit_a_control_frame(protocol):
    protocol.send_close(1000, "é" * 100)
    [(opcode, payload)] = sent(protocol)
    assert opcode == OP_CLOSE and len(payload) == 2 + 122
    assert payload[2:].decode("utf-8") == "é" * 61


def test_frames_the_client_sends_while_the_servers_close_is_unanswered_still_parse(protocol):
    protocol.send_close(1000)
    sent(protocol)
    events, due = taken(protocol, client_frame(b"in flight"), client_frame(b"ping", OP_PING))
    assert events == [(rfc6455.TEXT, "in flight"), (rfc6455.PING, b"ping")]
    assert due == [], "no pong after the close frame"


# Pings and pongs.

def test_a_ping_is_answered_with_a_pong_of_its_payload(protocol):
    events, due = taken(protocol, client_frame(b"are you there", OP_PING))
    assert events == [(rfc6455.PING, b"are you there")]
    assert due == [(OP_PONG, b"are you there")]


def test_each_ping_is_answered_when_the_writes_keep_up(protocol):
    protocol.receive_data(b"".join(client_frame(b"%d" % i, OP_PING) for i in range(3)))
    pongs = []
    for _ in protocol.events_received(1 << 20):
        pongs += server_frames(b"".join(protocol.data_to_send()))
    assert pongs == [(OP_PONG, b"0"), (OP_PONG, b"1"), (OP_PONG, b"2")]


def test_while_behind_only_the_latest_ping_is_answered_once_caught_up(protocol):
    events, due = taken(protocol, *(client_frame(b"%d" % i, OP_PING) for i in range(5)), behind=True)
    assert len(events) == 5 and due == []
    assert sent(protocol, behind=True) == []
    assert sent(protocol) == [(OP_PONG, b"4")]
    assert sent(protocol) == []


def test_a_pong_waiting_for_the_writes_is_dropped_by_a_close(protocol):
    taken(protocol, client_frame(b"late", OP_PING), behind=True)
    protocol.send_close(1000)
    assert sent(protocol) == [(OP_CLOSE, struct.pack("!H", 1000))]


def test_a_ping_goes_out_even_while_behind_and_its_pong_ends_the_wait(protocol):
    protocol.send_ping()
    assert protocol.awaiting_pong
    assert sent(protocol, behind=True) == [(OP_PING, b"")]
    events, due = taken(protocol, client_frame(b"", OP_PONG))
    assert events == [(rfc6455.PONG, b"")] and due == []
    assert not protocol.awaiting_pong


def test_after_a_close_a_ping_is_awaited_but_not_sent(protocol):
    """So a client that answers neither is cut by the ping timeout as by the close's."""
    protocol.send_close(1000)
    sent(protocol)
    protocol.send_ping()
    assert protocol.awaiting_pong and sent(protocol) == []


# When an answer is due.

def test_an_answer_is_due_only_once_its_event_is_taken(protocol):
    """What the caller writes while handling the events before a ping or a
    close goes out before the answer, as if the frames had come one by one."""
    protocol.receive_data(client_frame(b"first") + client_frame(b"p", OP_PING) + close_frame(1001))
    events = protocol.events_received(1 << 20)
    assert next(events) == (rfc6455.TEXT, "first")
    assert sent(protocol) == [] and protocol.state == rfc6455.OPEN
    assert next(events) == (rfc6455.PING, b"p")
    assert sent(protocol) == [(OP_PONG, b"p")]
    assert next(events) == (rfc6455.CLOSE, (1001, ""))
    assert sent(protocol) == [(OP_CLOSE, struct.pack("!H", 1001))]


def test_a_server_close_while_handling_an_event_wins_over_the_clients(protocol):
    """A message that makes the server close (a binary one, say) is answered
    with the server's close; the client's close after it only ends the wait."""
    protocol.receive_data(client_frame(b"\x00", OP_BINARY) + close_frame(1000))
    events = protocol.events_received(1 << 20)
    assert next(events) == (rfc6455.BINARY, b"\x00")
    protocol.send_close(1003, "Text frames only")
    assert next(events) == (rfc6455.CLOSE, (1000, ""))
    assert sent(protocol) == [(OP_CLOSE, struct.pack("!H", 1003) + b"Text frames only")]


def test_control_frames_between_fragments_are_answered_in_place(protocol):
    protocol.receive_data(fragment(b"one ") + client_frame(b"p", OP_PING) + fragment(b"two ", OP_CONTINUATION)
                          + client_frame(b"p2", OP_PING) + client_frame(b"three", OP_CONTINUATION))
    answered = []
    for event in protocol.events_received(1 << 20):
        answered.append((event, sent(protocol)))
    assert answered == [((rfc6455.PING, b"p"), [(OP_PONG, b"p")]), ((rfc6455.PING, b"p2"), [(OP_PONG, b"p2")]),
                        ((rfc6455.TEXT, "one two three"), [])]
