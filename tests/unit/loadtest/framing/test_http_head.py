"""One parser for every HTTP answer the load client reads."""

import pytest

from loadtest.framing import http_head, websocket_frames


def test_parse_head_reads_the_status_and_lowercases_header_names():
    status, headers = http_head.parse_head(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nTransfer-Encoding: chunked")
    assert status == 200
    assert headers == {"content-type": "text/plain", "transfer-encoding": "chunked"}
    with pytest.raises(http_head.HTTPError, match="not an HTTP response"):
        http_head.parse_head(b"SSH-2.0-OpenSSH")


def test_a_handshake_answer_is_read_by_the_same_parser():
    key = websocket_frames.new_key()
    accept = websocket_frames.accept_value(key)
    websocket_frames.check_handshake_response(b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: " + accept, key)
    with pytest.raises(websocket_frames.ProtocolError, match="handshake refused: HTTP/1.1 403 Forbidden"):
        websocket_frames.check_handshake_response(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0", key)
    with pytest.raises(websocket_frames.ProtocolError, match="not an HTTP response"):
        websocket_frames.check_handshake_response(b"SSH-2.0-OpenSSH", key)
    with pytest.raises(websocket_frames.ProtocolError, match="wrong Sec-WebSocket-Accept"):
        websocket_frames.check_handshake_response(b"HTTP/1.1 101 Switching Protocols\r\nSec-WebSocket-Accept: x", key)
