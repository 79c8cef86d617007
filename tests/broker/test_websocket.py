"""The websocket handshake the fast path relies on."""

import base64
import os
import socket

import pytest

from sockjs_clients import session_url


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
