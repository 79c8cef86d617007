"""Websockets after the upgrade: what the fast path relies on, and what the socket carries."""

import base64
import os
import socket
import struct
import urllib.parse

import pytest

from loadtest.framing.websocket_frames import OP_BINARY, OP_CLOSE, OP_TEXT, client_frame, parse_frames
from sockjs_clients import WebSocketClient, fall_behind, raw_websocket, read_to_end, session_url, wait_until


@pytest.mark.parametrize("endpoint", ["sockjs", "raw"])
def test_permessage_deflate_is_never_negotiated(broker, endpoint):
    """Every subscriber takes the same prebuilt, uncompressed frame bytes."""
    host, port = broker.origin[len("http://"):].split(":")
    url = session_url(broker.url) + "/websocket" if endpoint == "sockjs" else broker.url + "/websocket"
    request = ("GET %s HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
               "Sec-WebSocket-Extensions: permessage-deflate; client_max_window_bits\r\n\r\n"
               % (url[len(broker.origin):], host, base64.b64encode(os.urandom(16)).decode()))
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        sock.sendall(request.encode())
        response = b""
        while b"\r\n\r\n" not in response:
            response += sock.recv(4096)
    head = response.split(b"\r\n\r\n")[0].decode().lower()
    assert head.startswith("http/1.1 101")
    assert "sec-websocket-extensions" not in head


def _read_frames(sock, buffer, count):
    """The first ``count`` server frames in ``buffer`` (from
    :func:`sockjs_clients.raw_websocket`) as (opcode, payload), reading into
    ``buffer`` until they are there."""
    while True:
        found, _ = parse_frames(buffer)
        if len(found) >= count:
            return [(opcode, bytes(buffer[start:end])) for opcode, _, start, end in found[:count]]
        data = sock.recv(65536)
        assert data, "closed after %r" % buffer
        buffer += data


def test_frames_sent_with_the_upgrade_request_are_not_lost(broker):
    """A client may send frames before it has read the 101: they arrive in
    the same read as the request, and the broker hands them to the websocket."""
    path = session_url(broker.url)[len(broker.origin):] + "/websocket"
    sock, rest = raw_websocket(broker.origin, path, then=client_frame(b'["early"]'))
    with sock:
        assert _read_frames(sock, rest, 2) == [(OP_TEXT, b"o"), (OP_TEXT, b'a["early"]')]


def test_a_client_close_is_answered_and_the_connection_closed(broker):
    sock, rest = raw_websocket(broker.origin, urllib.parse.urlsplit(broker.url).path + "/websocket")
    with sock:
        sock.sendall(client_frame(struct.pack("!H", 1001) + b"leaving", OP_CLOSE))
        assert _read_frames(sock, rest, 1) == [(OP_CLOSE, struct.pack("!H", 1001))]
        read_to_end(sock, rest)
    wait_until(lambda: broker.stats()["connections_total"] == 0)


def test_a_client_close_while_behind_is_answered_after_the_backlog(start_broker):
    """A client that closes while the broker holds a backlog for it gets the
    backlog, then the answer to its close frame, then the end of the stream."""
    broker = start_broker("--client-rate", "0", "--write-timeout", "60")
    publisher = WebSocketClient(broker.url).open()
    sock, received = raw_websocket(broker.origin, urllib.parse.urlsplit(broker.url).path + "/websocket",
                                   receive_buffer=4096)
    with sock:
        wait_until(lambda: broker.stats()["connections_total"] == 2)
        sent = fall_behind(broker, publisher)
        sock.sendall(client_frame(struct.pack("!H", 1001), OP_CLOSE))
        read_to_end(sock, received)
    found, _ = parse_frames(bytes(received))
    assert [opcode for opcode, _, _, _ in found] == [OP_TEXT] * sent + [OP_CLOSE], (len(found), sent)
    opcode, _, start, end = found[-1]
    assert received[start:end] == struct.pack("!H", 1001)
    wait_until(lambda: broker.stats()["connections_total"] == 1)
    publisher.close()


def test_nothing_follows_the_servers_close_frame(broker):
    """A SockJS websocket refuses a binary frame with 1003 and waits for the
    client's close frame; broadcasts made meanwhile are not written after it
    (RFC 6455 section 5.5.1: a browser would fail the connection)."""
    path = session_url(broker.url)[len(broker.origin):] + "/websocket"
    sock, received = raw_websocket(broker.origin, path)
    with sock:
        sock.sendall(client_frame(b"\x00", OP_BINARY))
        opened, closing = _read_frames(sock, received, 2)
        assert opened == (OP_TEXT, b"o")
        assert closing[0] == OP_CLOSE and closing[1][:2] == struct.pack("!H", 1003), closing
        other = WebSocketClient(broker.url).open()
        other.send("after the close frame")
        assert other.receive() == ["after the close frame"]
        sock.sendall(client_frame(struct.pack("!H", 1003), OP_CLOSE))
        found, _ = parse_frames(bytes(read_to_end(sock, received)))
        assert [opcode for opcode, _, _, _ in found] == [OP_TEXT, OP_CLOSE], received
        other.close()
