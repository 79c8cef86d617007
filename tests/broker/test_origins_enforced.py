"""--allowed-origins: which pages may use the broker, as a rule and on the wire."""

import http.client

import websocket

from sockjs_clients import WebSocketClient, session_url


GOOD = "https://good.example"


EVIL = "http://evil.example"


def ws_status(broker, origin):
    """101 or the status a websocket handshake from a page of ``origin`` gets."""
    url = "ws" + session_url(broker.url)[4:] + "/websocket"
    options = {"suppress_origin": True} if origin is None else {"origin": origin}
    try:
        websocket.create_connection(url, timeout=5, **options).close()
    except websocket.WebSocketBadStatusException as error:
        return error.status_code
    return 101


def cors(broker, method, path, origin):
    """The CORS headers of one answer to a page of ``origin`` (its body unread:
    a streaming answer never ends)."""
    host, port = broker.origin[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request(method, path, headers={"Origin": origin, "Access-Control-Request-Headers": "x-y"})
        response = conn.getresponse()
        return {name: response.getheader(name) for name in (
            "Access-Control-Allow-Origin", "Access-Control-Allow-Credentials", "Content-Security-Policy")}
    finally:
        conn.close()


def xhr_path(broker, path):
    """``path`` itself, or a new session's URL path for a transport name."""
    return path if path.startswith("/") else session_url(broker.url)[len(broker.origin):] + "/" + path


def test_a_listed_broker_refuses_other_origins(start_broker):
    broker = start_broker("--allowed-origins", GOOD)
    assert ws_status(broker, EVIL) == 403
    assert ws_status(broker, "null") == 403
    assert ws_status(broker, GOOD) == 101
    assert ws_status(broker, broker.origin) == 101
    assert ws_status(broker, None) == 101, "no Origin: not a page of another site"
    for method, path in (("POST", "xhr"), ("OPTIONS", "xhr"), ("GET", "/broadcast/info")):
        evil = cors(broker, method, xhr_path(broker, path), EVIL)
        assert evil["Access-Control-Allow-Origin"] is None, (method, path, evil)
        assert evil["Access-Control-Allow-Credentials"] is None, (method, path, evil)
        good = cors(broker, method, xhr_path(broker, path), GOOD)
        assert good["Access-Control-Allow-Origin"] == GOOD, (method, path, good)
        assert good["Access-Control-Allow-Credentials"] == "true", (method, path, good)
    iframe = cors(broker, "GET", "/broadcast/iframe.html", EVIL)["Content-Security-Policy"]
    assert "frame-ancestors 'self' https://good.example" in iframe
    htmlfile = cors(broker, "GET", xhr_path(broker, "htmlfile?c=cb"), GOOD)
    assert "frame-ancestors" in htmlfile["Content-Security-Policy"]
    with WebSocketClient(broker.url) as client:
        client.send("still serving")
        assert client.collect(1) == ["still serving"]


def test_by_default_any_page_may_use_the_broker(broker):
    assert ws_status(broker, EVIL) == 101
    answer = cors(broker, "POST", xhr_path(broker, "xhr"), EVIL)
    assert answer["Access-Control-Allow-Origin"] == EVIL
    iframe = cors(broker, "GET", "/broadcast/iframe.html", EVIL)["Content-Security-Policy"]
    assert iframe.startswith("script-src 'self' 'sha256-") and "frame-ancestors" not in iframe


def status_of(broker, method, path, origin, body=""):
    """``(status, body)`` of one request from a page of ``origin`` (None: no ``Origin``)."""
    host, port = broker.origin[len("http://"):].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request(method, path, body=body, headers={} if origin is None else {"Origin": origin})
        response = conn.getresponse()
        return response.status, response.read(64).decode()
    finally:
        conn.close()


def test_a_page_of_another_origin_can_neither_open_a_session_nor_send_into_one(start_broker):
    broker = start_broker("--allowed-origins", GOOD)
    for method, transport in (("POST", "xhr"), ("POST", "xhr_streaming"), ("GET", "eventsource"),
                              ("GET", "htmlfile?c=cb"), ("GET", "jsonp?c=cb")):
        assert status_of(broker, method, xhr_path(broker, transport), EVIL) == (403, "Origin not allowed.\n")
    assert status_of(broker, "GET", "/broadcast/info", EVIL)[0] == 403
    with WebSocketClient(broker.url) as listener:
        path = xhr_path(broker, "xhr")
        assert status_of(broker, "POST", path, None) == (200, "o\n"), "no Origin: opened"
        send = path + "_send"
        assert status_of(broker, "POST", send, EVIL, '["blind"]')[0] == 403
        assert status_of(broker, "POST", path[:-len("xhr")] + "jsonp_send", EVIL, 'd=["blind"]')[0] == 403
        assert status_of(broker, "POST", send, GOOD, '["from a listed page"]')[0] == 204
        assert listener.collect(1) == ["from a listed page"], "the refused sends published nothing"
