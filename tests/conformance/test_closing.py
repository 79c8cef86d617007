"""How a session the server closes ends, on each kind of transport.

``/close`` closes every session as soon as it opens, with 3000 "Go away!".
"""

import pytest
import websocket

from broker.protocol.rfc6455 import CLOSE

GO_AWAY = 'c[3000,"Go away!"]'


def test_raw_websocket_closes_with_the_session_code_and_reason(conformance):
    ws = websocket.create_connection(conformance.ws_url("/close/websocket"), timeout=5)
    try:
        opcode, payload = ws.recv_data(control_frame=True)
    finally:
        ws.close()
    assert opcode == CLOSE
    assert payload == (3000).to_bytes(2, "big") + b"Go away!"


@pytest.mark.parametrize("transport, frame", [
    ("xhr", GO_AWAY + "\n"),
    ("jsonp?c=cb", '/**/cb("c[3000,\\"Go away!\\"]");\r\n'),
])
def test_poll_on_a_closed_session_answers_the_close_frame_at_once(conformance, transport, frame):
    session = conformance.session("/close")
    method = "POST" if transport == "xhr" else "GET"
    first = conformance.request(method, "%s/%s" % (session, transport))
    assert first.status == 200 and "o" in first.body and "c[" not in first.body
    for _ in range(2):
        again = conformance.request(method, "%s/%s" % (session, transport))
        assert (again.status, again.body) == (200, frame)


@pytest.mark.parametrize("method, transport, last", [
    ("POST", "xhr_streaming", GO_AWAY + "\n"),
    ("GET", "eventsource", "data: %s\r\n\r\n" % GO_AWAY),
    ("GET", "htmlfile?c=cb", '<script>\np("c[3000,\\"Go away!\\"]");\n</script>\r\n'),
])
def test_http10_keep_alive_stream_is_closed_after_the_close_frame(conformance, method,
                                                                  transport, last):
    """An HTTP/1.0 response with neither length nor chunks ends only when the
    connection closes, whatever keep-alive the client asked for."""
    stream = conformance.raw("%s %s/%s HTTP/1.0\r\nConnection: Keep-Alive\r\n"
                             "Content-Length: 0\r\n\r\n"
                             % (method, conformance.session("/close"), transport))
    try:
        status, headers = stream.read_head()
        assert status == 200
        assert "transfer-encoding" not in headers and "content-length" not in headers
        assert stream.read_to_eof().decode().endswith(last)
    finally:
        stream.close()
