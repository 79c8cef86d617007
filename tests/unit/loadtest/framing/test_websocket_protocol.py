"""The load client's protocol without sockets: bytes in, events out, bytes to send."""

import pytest

from broker.protocol.frames import websocket_frame
from loadtest.framing import payload, websocket_frames
from loadtest.framing.websocket_protocol import OPENED, ClientProtocol, Closed, Delivered

CLIENT = 7


def server_frame(data, opcode=websocket_frames.OP_TEXT, fin=True):
    frame = websocket_frame(data, opcode)
    return frame if fin else bytes((frame[0] & 0x7F,)) + frame[1:]


def array(*messages):
    return server_frame(b"a[" + b",".join(b'"' + m + b'"' for m in messages) + b"]")


def unmask(frame):
    """The payload of one masked client frame shorter than 126 bytes."""
    assert frame[1] & 0x80
    key, body = frame[2:6], frame[6:]
    assert len(body) == frame[1] & 0x7F
    return bytes(b ^ key[i % 4] for i, b in enumerate(body))


def handshake_answer(protocol):
    key = protocol.data_to_send().split(b"Sec-WebSocket-Key: ")[1].split(b"\r\n")[0]
    return b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: " + websocket_frames.accept_value(key) + b"\r\n\r\n"


def opened(sockjs=True):
    """A protocol past its handshake (and, over SockJS, its open frame)."""
    protocol = ClientProtocol(CLIENT, "127.0.0.1:8080", "/broadcast/000/abc/websocket", sockjs)
    events = protocol.receive_data(handshake_answer(protocol) + (server_frame(b"o") if sockjs else b""))
    assert list(events) == [OPENED] and protocol.opened
    return protocol


def test_the_handshake_goes_first_and_the_open_frame_opens():
    protocol = ClientProtocol(CLIENT, "127.0.0.1:8080", "/broadcast/000/abc/websocket")
    request = protocol.data_to_send()
    assert request.startswith(b"GET /broadcast/000/abc/websocket HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n")
    assert protocol.data_to_send() == b""
    key = request.split(b"Sec-WebSocket-Key: ")[1].split(b"\r\n")[0]
    answer = b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: " + websocket_frames.accept_value(key) + b"\r\n\r\n"
    assert list(protocol.receive_data(answer[:20])) == []
    assert list(protocol.receive_data(answer[20:])) == []  # a SockJS session is open at its open frame
    assert not protocol.opened
    assert list(protocol.receive_data(server_frame(b"o"))) == [OPENED]


def test_a_raw_websocket_opens_with_the_handshake():
    opened(sockjs=False)


def test_own_messages_come_back_with_their_send_times_and_others_are_only_counted():
    protocol = opened()
    seq = protocol.send(1000)
    assert seq == 1 and protocol.pending == {1: 1000}
    assert unmask(protocol.data_to_send()) == b'["7:1:1000"]'
    protocol.send(2000)
    protocol.data_to_send()
    events = protocol.receive_data(array(payload.message(17, 1, 5), b"7:1:1000", payload.message(3, 9, 9)))
    assert list(events) == [Delivered(3, [(1, 1000)])]
    assert protocol.pending == {2: 2000}
    again = protocol.receive_data(array(b"7:1:1000", b"7:2:2000"))  # a duplicate is no second round trip
    assert list(again) == [Delivered(2, [(2, 2000)])]
    assert list(protocol.receive_data(array(b"1:1:1"))) == [Delivered(1, ())]


def test_a_listener_times_every_message_of_the_feed_and_sends_nothing():
    protocol = ClientProtocol.listener("127.0.0.1:8080", "/broadcast/000/abc/websocket")
    events = protocol.receive_data(handshake_answer(protocol) + server_frame(b"o"))
    assert list(events) == [OPENED]
    feed = payload.message(payload.FEED_ID, 1, 1000), payload.message(payload.FEED_ID, 2, 2000)
    events = protocol.receive_data(array(feed[0], payload.message(7, 1, 5), feed[1]))
    assert list(events) == [Delivered(3, [(1, 1000), (2, 2000)])]
    assert list(protocol.receive_data(array(feed[0]))) == [Delivered(1, [(1, 1000)])]  # each delivery is timed
    assert protocol.data_to_send() == b""


def test_a_first_message_goes_right_after_the_open_frame_untimed_before_anything_else():
    protocol = ClientProtocol.listener("127.0.0.1:8080", "/broadcast/000/abc/websocket")
    protocol.first_message = payload.token_message("a.b.c")
    events = protocol.receive_data(handshake_answer(protocol))
    assert list(events) == [] and protocol.data_to_send() == b"", "nothing before the open frame"
    events = protocol.receive_data(server_frame(b"o") + array(payload.message(payload.FEED_ID, 1, 1000)))
    assert list(events) == [OPENED, Delivered(1, [(1, 1000)])]
    assert unmask(protocol.data_to_send()) == b'["{\\"token\\":\\"a.b.c\\"}"]' and protocol.pending is None
    assert list(protocol.receive_data(server_frame(b"h"))) == [] and protocol.data_to_send() == b"", "once"


def test_raw_messages_are_one_per_frame():
    protocol = opened(sockjs=False)
    protocol.send(1000)
    assert unmask(protocol.data_to_send()) == b"7:1:1000"
    events = protocol.receive_data(server_frame(b"7:1:1000") + server_frame(b"17:1:1000") + server_frame(b"8:1:1"))
    assert list(events) == [Delivered(3, [(1, 1000)])]


def test_one_read_may_hold_many_frames_or_part_of_one():
    protocol = opened()
    frames = array(b"1:1:1", b"1:2:2") + server_frame(b"h") + array(b"2:1:1") + array(b"3:1:" + b"9" * 200)
    cut = len(frames) - 50
    assert list(protocol.receive_data(frames[:cut])) == [Delivered(3, ())]
    assert list(protocol.receive_data(frames[cut:])) == [Delivered(1, ())]
    for byte in frames:  # a byte at a time
        events = list(protocol.receive_data(bytes((byte,))))
        assert events in ([], [Delivered(2, ())], [Delivered(1, ())])


def test_everything_the_server_sends_at_once_comes_out_in_order():
    protocol = ClientProtocol(CLIENT, "127.0.0.1:8080", "/broadcast/000/abc/websocket")
    data = handshake_answer(protocol) + server_frame(b"o") + array(b"1:1:1") + server_frame(b'c[3000,"Go away!"]')
    events = list(protocol.receive_data(data))
    assert events == [OPENED, Delivered(1, ()), Closed('SockJS close [3000,"Go away!"]')]
    assert not protocol.alive
    assert list(protocol.receive_data(array(b"1:2:2"))) == []  # nothing after Closed


def test_a_ping_is_answered_with_a_pong():
    protocol = opened()
    assert list(protocol.receive_data(server_frame(b"hi", websocket_frames.OP_PING))) == []
    pong = protocol.data_to_send()
    assert pong[0] == 0x80 | websocket_frames.OP_PONG and unmask(pong) == b"hi"


def test_a_fragmented_message_counts_once_it_is_whole():
    protocol = opened()
    first, rest = b'a["1:1:1","1', b':2:2"]'
    assert list(protocol.receive_data(server_frame(first, fin=False))) == []
    assert list(protocol.receive_data(server_frame(rest, websocket_frames.OP_CONTINUATION))) == [Delivered(2, ())]


@pytest.mark.parametrize("data, reason", [
    (server_frame(b"", websocket_frames.OP_CLOSE), "websocket closed by the server"),
    (server_frame(b"x", websocket_frames.OP_CONTINUATION), "continuation frame without a first fragment"),
    (bytes((0x81, 0x81)) + b"\0\0\0\0x", "the server sent a masked frame"),
])
def test_what_ends_a_connection_is_its_closed_event(data, reason):
    protocol = opened()
    assert list(protocol.receive_data(data)) == [Closed(reason)]
    assert protocol.closed_reason == reason


def test_a_refused_handshake_closes_with_the_status_line():
    protocol = ClientProtocol(CLIENT, "127.0.0.1:8080", "/nothing/websocket")
    events = protocol.receive_data(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    assert list(events) == [Closed("handshake refused: HTTP/1.1 404 Not Found")]


def test_the_first_reason_to_close_stays():
    protocol = opened()
    assert protocol.close("closed by the client") == Closed("closed by the client")
    assert protocol.close("closed by the server") == Closed("closed by the client")
    assert protocol.closed_reason == "closed by the client" and not protocol.alive


def test_with_positions_messages_are_counted_in_their_envelopes_and_starts_are_not():
    protocol = ClientProtocol(CLIENT, "127.0.0.1:8080", "/broadcast/000/abc/websocket?positions=1", True, True)
    protocol.receive_data(handshake_answer(protocol) + server_frame(b"o"))
    seq = protocol.send(1000)
    start = b'{"c":"open","epoch":"k3J9x2Qa","o":"40"}'
    theirs = b'{"o":"41","d":"3:1:5"}'
    mine = b'{"o":"42","d":"%d:%d:1000"}' % (CLIENT, seq)
    events = protocol.receive_data(server_frame(b"a[" + b",".join([start, theirs, mine]) + b"]"))
    assert list(events) == [Delivered(2, [(seq, 1000)])]
