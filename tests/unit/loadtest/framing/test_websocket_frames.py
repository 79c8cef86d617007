import pytest

from broker.protocol.frames import websocket_frame
from loadtest.framing import websocket_frames


def unmask(frame):
    assert frame[1] & 0x80
    length = frame[1] & 0x7F
    offset = 2
    if length == 126:
        length = int.from_bytes(frame[2:4], "big")
        offset = 4
    key = frame[offset : offset + 4]
    body = frame[offset + 4 :]
    assert len(body) == length
    return bytes(b ^ key[i % 4] for i, b in enumerate(body))


def server_frame(payload, opcode=websocket_frames.OP_TEXT, fin=True):
    frame = websocket_frame(payload, opcode)
    return frame if fin else bytes((frame[0] & 0x7F,)) + frame[1:]


def test_accept_value_matches_rfc_6455_example():
    assert websocket_frames.accept_value(b"dGhlIHNhbXBsZSBub25jZQ==") == b"s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


def test_handshake_request_and_response_check():
    key = websocket_frames.new_key()
    request = websocket_frames.handshake_request("127.0.0.1:8080", "/broadcast/websocket", key)
    assert request.startswith(b"GET /broadcast/websocket HTTP/1.1\r\n")
    assert b"Sec-WebSocket-Key: " + key + b"\r\n" in request
    assert request.endswith(b"\r\n\r\n")
    head = (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
            b"Sec-WebSocket-Accept: " + websocket_frames.accept_value(key))
    websocket_frames.check_handshake_response(head, key)
    with pytest.raises(websocket_frames.ProtocolError, match="Sec-WebSocket-Accept"):
        websocket_frames.check_handshake_response(head, websocket_frames.new_key())
    with pytest.raises(websocket_frames.ProtocolError, match="404"):
        websocket_frames.check_handshake_response(b"HTTP/1.1 404 Not Found\r\n", key)


@pytest.mark.parametrize("size", [0, 5, 125, 126, 300, 70000])
def test_client_frames_are_masked_and_carry_the_payload(size):
    payload = bytes(i % 251 for i in range(size))
    frame = websocket_frames.client_frame(payload)
    assert frame[0] == 0x81
    if size < 70000:
        assert unmask(frame) == payload
    else:
        assert frame[1] == 0x80 | 127
        assert int.from_bytes(frame[2:10], "big") == size


def test_parse_frames_reports_offsets_and_keeps_the_incomplete_tail():
    data = server_frame(b"o") + server_frame(b'a["x"]') + server_frame(b"y" * 300)
    for cut in range(len(data) + 1):
        frames, consumed = websocket_frames.parse_frames(data[:cut])
        complete = [data[start:end] for _, _, start, end in frames]
        assert complete == [b"o", b'a["x"]', b"y" * 300][: len(complete)]
        assert consumed == sum(len(server_frame(p)) for p in complete)


def test_parse_frames_64_bit_length_opcodes_and_fin():
    big = b"z" * 70000
    data = server_frame(big) + server_frame(b"ab", websocket_frames.OP_PING) + server_frame(b"c", fin=False)
    frames, consumed = websocket_frames.parse_frames(data)
    assert consumed == len(data)
    assert [(op, fin, end - start) for op, fin, start, end in frames] == [
        (websocket_frames.OP_TEXT, 1, 70000), (websocket_frames.OP_PING, 1, 2), (websocket_frames.OP_TEXT, 0, 1)]


def test_masked_or_oversized_server_frames_are_protocol_errors():
    with pytest.raises(websocket_frames.ProtocolError, match="masked"):
        websocket_frames.parse_frames(bytes((0x81, 0x81)) + b"\0\0\0\0x")
    with pytest.raises(websocket_frames.ProtocolError, match="limit"):
        websocket_frames.parse_frames(server_frame(b"x" * 200), max_payload=100)


@pytest.mark.parametrize("size", [0, 1, 2, 125, 126, 127, 65535, 65536])
def test_a_read_of_exactly_one_frame_parses_like_any_other(size):
    frame = server_frame(b"z" * size)
    assert websocket_frames.parse_frames(frame) == ([(websocket_frames.OP_TEXT, 1, len(frame) - size, len(frame))], len(frame))
    frames, consumed = websocket_frames.parse_frames(frame + frame[:1])
    assert frames == [(websocket_frames.OP_TEXT, 1, len(frame) - size, len(frame))] and consumed == len(frame)
