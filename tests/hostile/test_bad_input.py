"""One misbehaving client costs nothing else: it gets a clear answer or loses
only its own connection, and every other client keeps every message."""

import json
import os
import socket
import struct
import time
import urllib.parse

import pytest
import websocket

from broker.ops import log_rate
from broker.transports.websocket import CLOSE_TIMEOUT
from sockjs_clients import (Closed, EventSourceClient, JsonpClient, RawWebSocketClient,
                            WebSocketClient, XhrStreamingClient, read_to_end, session_url, wait_until)


@pytest.fixture
def witnesses(broker):
    """Well-behaved clients that must keep receiving through the abuse."""
    clients = [WebSocketClient(broker.url).open(), XhrStreamingClient(broker.url).open(),
               EventSourceClient(broker.url).open()]
    yield clients
    for client in clients:
        client.close()


def still_served(broker, witnesses, label):
    """Every witness receives a fresh message, and the broker still answers."""
    witnesses[0].send(label)
    for client in witnesses:
        assert client.receive() == [label], client.transport
    assert broker.request("GET", "/healthz")[0] == 200


@pytest.mark.parametrize("body, answer", [
    (b"[\"unterminated", "Broken JSON encoding."),
    (b"", "Payload expected."),
])
def test_xhr_send_answers_bad_payloads(broker, witnesses, body, answer):
    with XhrStreamingClient(broker.url) as client:
        reply = client.post(client.url + "/xhr_send", body, expect=500)
        assert reply.decode() == answer
    still_served(broker, witnesses, "after bad xhr_send")


@pytest.mark.parametrize("body, answer", [
    ("d=%5B%22unterminated", "Broken JSON encoding."),
    ("d=", "Payload expected."),
])
def test_jsonp_send_answers_bad_payloads(broker, witnesses, body, answer):
    with JsonpClient(broker.url) as client:
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        reply = client.post(client.url + "/jsonp_send", body, headers, expect=500)
        assert reply.decode() == answer
    still_served(broker, witnesses, "after bad jsonp_send")


def test_a_client_cannot_flood_the_log(broker, witnesses):
    """Each 500 the protocol requires is a line of the access log, at a bounded rate: 200 bad
    sends and callbacks write at most a burst of lines (broker.ops.log_rate)."""
    started = time.monotonic()
    with XhrStreamingClient(broker.url) as client:
        for _ in range(100):
            client.post(client.url + "/xhr_send", '["unterminated', expect=500)
            conn = client.http()
            conn.request("GET", client.target(client.url + "/jsonp?c=%3Cscript"))
            assert conn.getresponse().status == 500
            conn.close()
    still_served(broker, witnesses, "after bad sends")
    # A burst at once, then one more every PERIOD / BURST seconds: a loaded PyPy's flood took
    # over 6 s once, and its eleventh line came in its right.
    most = log_rate.BURST + int((time.monotonic() - started) * log_rate.BURST / log_rate.PERIOD) + 1
    lines = [line for line in broker.server.output.splitlines() if "tornado.access: 500" in line]
    assert 0 < len(lines) <= most, "\n".join(lines[:20])


@pytest.mark.parametrize("suffix", ["/xhr_send", "/jsonp_send"])
def test_send_to_unknown_session_is_404(broker, witnesses, suffix):
    client = XhrStreamingClient(broker.url)  # never opened: its session does not exist
    client.post(client.url + suffix, '["x"]', expect=404)
    still_served(broker, witnesses, "after unknown session")


def test_oversized_xhr_send_closes_only_that_session(broker, witnesses):
    with XhrStreamingClient(broker.url) as offender:
        reply = offender.post(offender.url + "/xhr_send", json.dumps(["x" * 70000]), expect=413)
        assert reply == b"Message too big."
        with pytest.raises(Closed) as closed:
            offender.receive()
        assert closed.value.code == 1009
    still_served(broker, witnesses, "after oversized xhr_send")


def test_oversized_websocket_message_closes_only_that_connection(broker, witnesses):
    offender = WebSocketClient(broker.url).open()
    offender.send("x" * 70000)
    with pytest.raises(Closed) as closed:
        while True:
            offender.receive()
    assert closed.value.code == 1009
    still_served(broker, witnesses, "after oversized websocket message")
    assert broker.stats()["messages_in"] == 1


def test_broken_json_on_websocket_closes_only_that_connection(broker, witnesses):
    offender = WebSocketClient(broker.url).open()
    offender.ws.send('["unterminated')
    with pytest.raises(Closed):
        offender.read_frame()
    still_served(broker, witnesses, "after broken websocket JSON")


def test_invalid_utf8_closes_only_that_connection(broker, witnesses):
    offender = WebSocketClient(broker.url).open()
    offender.ws.send_frame(websocket.ABNF.create_frame(b'["\xff\xfe"]', websocket.ABNF.OPCODE_TEXT))
    with pytest.raises(Closed):
        offender.read_frame()
    still_served(broker, witnesses, "after invalid UTF-8")


@pytest.mark.parametrize("garbage, code", [
    pytest.param(b"\x81\x05hello", 1002, id="unmasked client frame"),
    pytest.param(b"\x8f\x80" + os.urandom(4), 1002, id="reserved opcode"),
    pytest.param(b"\x83\x85" + os.urandom(9), 1002, id="reserved opcode, with payload"),
    pytest.param(b"\xf1\x80" + os.urandom(4), 1002, id="reserved bits set"),
    pytest.param(b"\x81\xff" + struct.pack("!Q", 1 << 62), 1009, id="absurd length"),
    pytest.param(b"\x16\x03\x01\x02\x00" + bytes(range(64)), 1002, id="a TLS ClientHello"),
])
def test_garbage_frames_close_only_that_connection(broker, witnesses, garbage, code):
    offender = WebSocketClient(broker.url).open()
    offender.ws.sock.sendall(garbage)
    with pytest.raises(Closed) as closed:
        offender.read_frame()
    assert closed.value.code == code
    # The broker shuts its side after the close frame, without waiting for the client's.
    read_to_end(offender.ws.sock, bytearray(), timeout=CLOSE_TIMEOUT / 2)
    still_served(broker, witnesses, "after garbage frame")


def test_garbage_http_gets_an_error_not_a_crash(broker, witnesses):
    host, port = broker.origin[len("http://"):].split(":")
    for junk in (b"\x16\x03\x01\x02\x00" + os.urandom(200), b"GET / HTTP/9.9\r\n\r\n",
                 b"POST /publish HTTP/1.1\r\nContent-Length: -5\r\n\r\n"):
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            raw.sendall(junk)
            raw.shutdown(socket.SHUT_WR)
            read_to_end(raw, bytearray())
    still_served(broker, witnesses, "after garbage HTTP")


def test_clients_vanishing_mid_stream_cost_nothing(broker, witnesses):
    for _ in range(20):
        client = XhrStreamingClient(broker.url).open()
        client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
    still_served(broker, witnesses, "after resets")
    wait_until(lambda: broker.stats()["connections_total"] == len(witnesses))


@pytest.mark.parametrize("payload", ['[NaN]', '[Infinity]', '["lone \\ud800"]'])
def test_message_without_valid_json_text_closes_only_its_session(start_broker, payload):
    broker = start_broker("--replay", "3")
    with WebSocketClient(broker.url) as witness:
        offender = WebSocketClient(broker.url).open()
        offender.ws.send(payload)
        with pytest.raises(Closed) as closed:
            offender.receive()
        assert closed.value.code == 1007
        witness.send("after")
        assert witness.receive() == ["after"]
        with WebSocketClient(broker.url) as late:
            assert late.receive() == ["after"]


@pytest.mark.parametrize("client_class", [WebSocketClient, XhrStreamingClient, JsonpClient],
                         ids=lambda cls: cls.transport)
def test_no_client_can_pass_for_a_backend_or_the_broker(broker, witnesses, client_class):
    """A client's message that is not a string closes its session, and reaches nobody: only a
    backend publishes objects, and only the broker its own, {"counter": ...} and {"audience": N}."""
    offender = client_class(broker.url).open()
    offender.send({"counter": 999999}, {"audience": 0}, "after the forgeries")
    with pytest.raises(Closed) as closed:
        offender.collect(1)
    assert (closed.value.code, closed.value.reason) == (1007, "A client's messages are strings")
    offender.close()
    still_served(broker, witnesses, "after forged messages")
    # What looks like JSON in a string stays a string: a viewer cannot mistake it for an object.
    witnesses[0].send('{"total": 1}')
    for client in witnesses:
        assert client.receive() == ['{"total": 1}'], client.transport


def test_binary_frame_on_raw_websocket_closes_only_that_connection(broker, witnesses):
    offender = RawWebSocketClient(broker.url).open()
    offender.ws.send_binary(b"\x00\x01")
    with pytest.raises(Closed) as closed:
        offender.read_frame()
    assert (closed.value.code, closed.value.reason) == (1003, "Text frames only")
    still_served(broker, witnesses, "after a binary frame")


@pytest.mark.parametrize("body", ['"hello"', '{"a": 1}', "42"])
def test_send_payload_must_be_an_array(broker, witnesses, body):
    with XhrStreamingClient(broker.url) as client:
        assert client.post(client.url + "/xhr_send", body, expect=500) == b"Payload expected."
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        form = "d=" + urllib.parse.quote(body)
        assert client.post(client.url + "/jsonp_send", form, headers, expect=500) == b"Payload expected."
    still_served(broker, witnesses, "after a non-array payload")
    assert broker.stats()["messages_in"] == 1


def test_publish_refuses_nan(broker):
    headers = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
    status, body = broker.request("POST", "/publish", b"NaN", headers)
    assert status == 400 and "publishable" in body["error"]


def test_json_nested_too_deeply_is_refused_cleanly(broker, witnesses):
    deep = "[" * 30000 + "]" * 30000
    headers = {"Authorization": "Bearer s3cret", "Content-Type": "application/json"}
    status, body = broker.request("POST", "/publish", deep.encode(), headers)
    assert status == 400 and "deeply" in body["error"]
    with XhrStreamingClient(broker.url) as client:
        assert client.post(client.url + "/xhr_send", "[" * 30000 + "]" * 30000, expect=500) \
            == b"Broken JSON encoding."
    offender = WebSocketClient(broker.url).open()
    offender.ws.send("[" * 30000 + "]" * 30000)
    with pytest.raises(Closed):
        offender.read_frame()
    still_served(broker, witnesses, "after deep JSON")
    assert "Traceback" not in broker.server.output


def test_binary_frame_on_sockjs_websocket_closes_only_that_connection(broker, witnesses):
    offender = WebSocketClient(broker.url).open()
    offender.ws.send_binary(b'["binary"]')
    with pytest.raises(Closed) as closed:
        offender.read_frame()
    assert closed.value.code == 1003
    still_served(broker, witnesses, "after a binary frame")
    assert broker.stats()["messages_in"] == 1


def test_clients_closing_right_after_the_handshake_leave_no_traceback(broker, witnesses):
    host, port = broker.origin[len("http://"):].split(":")
    for _ in range(200):
        path = urllib.parse.urlsplit(session_url(broker.url)).path + "/websocket"
        with socket.create_connection((host, int(port)), timeout=5) as raw:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            raw.sendall(("GET %s HTTP/1.1\r\nHost: %s:%s\r\nUpgrade: websocket\r\n"
                         "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                         "Sec-WebSocket-Version: 13\r\n\r\n" % (path, host, port)).encode())
    still_served(broker, witnesses, "after vanishing handshakes")
    wait_until(lambda: broker.stats()["connections_total"] == len(witnesses))
    assert "Traceback" not in broker.server.output
