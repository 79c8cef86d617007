"""--max-message-size holds for the bytes the room keeps and sends, not for the characters a
client or a backend sent: a message's JSON text, with the escapes SockJS requires (an emoji is
12 bytes, ``\\ud83d\\ude00``), is at most the limit, or the message is refused as too big; and no
transport sends a kept message grown by more than docs/sizing.rst says (the script transports'
string literals, frames.SCRIPT_STRING_GROWTH times, where each ``<`` was six bytes)."""

import json

import pytest

from broker.protocol.frames import SCRIPT_STRING_GROWTH
from sockjs_clients import (Closed, EventSourceClient, HtmlFileClient, RawWebSocketClient, WebSocketClient,
                            XhrStreamingClient)

MAX = 4096
AUTH = {"Authorization": "Bearer s3cret"}
EMOJI = "\U0001f600"
# 1,000 emoji: 4,004 bytes of UTF-8 in a send's body, under MAX; 12,002 as the room would keep them.
EMOJI_MESSAGE = EMOJI * 1000


def kept(message):
    """A message's JSON text as SockJS sends it: ASCII, every other character escaped."""
    return json.dumps(message, separators=(",", ":"))


@pytest.fixture
def small(start_broker):
    return start_broker("--max-message-size", str(MAX), "--publish-token", "s3cret")


def xhr_send(client, body, headers):
    """(status, body) of an xhr_send on a connection of its own."""
    conn = client.http()
    try:
        conn.request("POST", client.target(client.url + "/xhr_send"), body=body, headers=headers)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def received_by_viewer(broker, viewer, last):
    """Whether ``viewer`` receives anything before ``last``, which a backend publishes now."""
    assert broker.request("POST", "/publish", last.encode(), AUTH)[0] == 200
    return viewer.receive() != [last]


@pytest.mark.parametrize("headers", [{}, {"Connection": "close"}], ids=["the broker's send", "Tornado's send"])
def test_an_xhr_send_under_the_limit_whose_message_is_kept_over_it_is_refused(small, headers):
    body = json.dumps([EMOJI_MESSAGE], ensure_ascii=False).encode()
    assert len(body) <= MAX < len(kept(EMOJI_MESSAGE))
    with XhrStreamingClient(small.url) as viewer, XhrStreamingClient(small.url) as offender:
        assert xhr_send(offender, body, headers) == (413, b"Message too big.")
        with pytest.raises(Closed) as closed:
            offender.receive()
        assert closed.value.code == 1009
        assert not received_by_viewer(small, viewer, "after")
    assert small.stats()["messages_in"] == 1


@pytest.mark.parametrize("client", [WebSocketClient, RawWebSocketClient])
def test_a_websocket_message_under_the_limit_kept_over_it_closes_its_connection(small, client):
    with XhrStreamingClient(small.url) as viewer:
        offender = client(small.url).open()
        offender.ws.send(json.dumps([EMOJI_MESSAGE], ensure_ascii=False) if client is WebSocketClient
                         else EMOJI_MESSAGE)
        with pytest.raises(Closed) as closed:
            while True:
                offender.receive()
        assert closed.value.code == 1009
        assert not received_by_viewer(small, viewer, "after")


def test_a_publish_kept_over_the_limit_answers_413(small):
    body = EMOJI_MESSAGE.encode()
    assert len(body) <= MAX
    status, answer = small.request("POST", "/publish", body, AUTH)
    assert status == 413 and "12002 bytes" in answer["error"], answer
    assert small.stats()["messages_in"] == 0


def raw_frames(viewer):
    """The next ``a`` frame ``viewer`` receives, as the bytes its transport carries it in (past
    the HTTP chunk's own header, for a stream)."""
    while True:
        if isinstance(viewer, WebSocketClient):
            frame = viewer.ws.recv_frame().data
        else:
            frame = viewer.response.readline()
            if isinstance(viewer, EventSourceClient):
                frame += viewer.response.readline()
        if frame.removeprefix(b"data: ").startswith((b"a", b"p(")):
            return frame


def test_a_message_at_the_limit_reaches_every_viewer_within_its_documented_bound(small):
    """Every character SockJS or a script escapes, in one message kept at exactly MAX bytes: a
    websocket, xhr-streaming and eventsource carry it in MAX and a few bytes of framing, htmlfile
    at most SCRIPT_STRING_GROWTH times that; each decodes it back."""
    mix = '</<!--<>&"\\\x01\u2028' + EMOJI
    message = mix + "<!--<>&" * ((MAX - len(kept(mix))) // 7)
    message += "x" * (MAX - len(kept(message)))
    assert len(kept(message)) == MAX
    frame = 3 + MAX  # a[...]
    viewers = {WebSocketClient: frame, XhrStreamingClient: frame + 1, EventSourceClient: frame + 10,
               HtmlFileClient: SCRIPT_STRING_GROWTH * frame + 2 + len("p();\n")}
    opened = [client(small.url).open() for client in viewers]
    try:
        sender = WebSocketClient(small.url).open()
        sender.ws.send(json.dumps([message], ensure_ascii=False))  # under MAX: "\u2028" and the emoji raw
        for viewer, bound in zip(opened, viewers.values()):
            data = raw_frames(viewer)
            assert len(data) <= bound, (viewer.transport, len(data), bound)
            text = data.decode()
            if isinstance(viewer, HtmlFileClient):
                text = json.loads(text[2:text.rindex(")")])
            assert json.loads(text.removeprefix("data: ").strip()[1:]) == [message], viewer.transport
        sender.close()
    finally:
        for viewer in opened:
            viewer.close()


def test_a_jsonp_send_under_the_limit_whose_message_is_kept_over_it_is_refused(small):
    body = json.dumps(["\u00e9" * 1500], ensure_ascii=False).encode()  # 3,004 bytes; 9,002 as kept
    with XhrStreamingClient(small.url) as offender:
        conn = offender.http()
        conn.request("POST", offender.target(offender.url + "/jsonp_send"), body=body,
                     headers={"Content-Type": "text/plain"})
        response = conn.getresponse()
        assert (response.status, response.read()) == (413, b"Message too big.")
        conn.close()
        with pytest.raises(Closed) as closed:
            offender.receive()
        assert closed.value.code == 1009
