"""A SockJS session over HTTP without sockets: two connections' bytes in, events and requests out."""

import json
import urllib.parse

import pytest

from loadtest.framing import payload
from loadtest.framing.websocket_protocol import OPENED, Closed, Delivered
from loadtest.framing.http_transport_protocol import NEW_CONNECTION, NEW_SEND_CONNECTION, HttpSessionProtocol

CLIENT = 7
SESSION = "/broadcast/000/abc"
STREAM_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: application/javascript\r\nTransfer-Encoding: chunked\r\n\r\n"
NO_CONTENT = b"HTTP/1.1 204 No Content\r\nContent-Type: text/plain\r\n\r\n"


def chunk(data):
    return b"%x\r\n%s\r\n" % (len(data), data)


def array(*messages):
    return b"a[" + b",".join(b'"' + m + b'"' for m in messages) + b"]\n"


def poll(frame, close=False):
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (
        len(frame), b"Connection: close\r\n" if close else b"", frame)


def streaming(transport="xhr-streaming"):
    """An xhr-streaming session past its open frame."""
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, transport)
    assert protocol.data_to_send().startswith(b"POST /broadcast/000/abc/xhr_streaming HTTP/1.1\r\n")
    assert list(protocol.receive_data(STREAM_HEAD + chunk(b"h" * 2048 + b"\n"))) == []
    assert list(protocol.receive_data(chunk(b"o\n"))) == [OPENED]
    return protocol


def sent_messages(request):
    return json.loads(request.partition(b"\r\n\r\n")[2])


def test_a_stream_opens_delivers_and_times_its_own_messages():
    protocol = streaming()
    assert protocol.send(1000) == 1 and protocol.pending == {1: 1000}
    assert sent_messages(protocol.sends_to_send()) == ["7:1:1000"]
    events = protocol.receive_data(chunk(array(b"3:1:5", b"7:1:1000")) + chunk(b"h\n"))
    assert list(events) == [Delivered(2, [(1, 1000)])]
    assert protocol.pending == {} and protocol.data_to_send() == b""


def test_one_send_in_flight_and_what_comes_meanwhile_goes_together_in_the_next():
    protocol = streaming()
    protocol.send(1000)
    protocol.sends_to_send()
    protocol.send(2000)
    protocol.send(3000)
    assert protocol.sends_to_send() == b""
    assert list(protocol.send_answer_data(NO_CONTENT)) == []
    assert sent_messages(protocol.sends_to_send()) == ["7:2:2000", "7:3:3000"]


def test_a_send_answered_otherwise_closes_the_client_naming_the_status():
    protocol = streaming()
    protocol.send(1000)
    assert list(protocol.send_answer_data(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")) == [
        Closed("xhr_send answered HTTP 404")]
    assert not protocol.alive and list(protocol.receive_data(chunk(b"o\n"))) == []


def test_jsonp_sends_a_form_answered_200():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "jsonp-polling")
    assert protocol.data_to_send().startswith(b"GET /broadcast/000/abc/jsonp?c=_sockjs_load HTTP/1.1\r\n")
    assert list(protocol.receive_data(poll(b'/**/_sockjs_load("o");\r\n'))) == [OPENED]
    protocol.send(1000)
    form = protocol.sends_to_send().partition(b"\r\n\r\n")[2].decode()
    assert json.loads(urllib.parse.parse_qs(form)["d"][0]) == ["7:1:1000"]
    assert list(protocol.send_answer_data(poll(b"ok"))) == []
    assert list(protocol.receive_data(poll(b'_sockjs_load("a[\\"7:1:1000\\"]");\r\n'))) == [Delivered(1, [(1, 1000)])]


def test_a_stream_that_ends_is_reopened_at_once_on_the_same_session_and_connection():
    protocol = streaming()
    assert list(protocol.receive_data(chunk(array(b"1:1:1")) + b"0\r\n\r\n")) == [Delivered(1, ())]
    assert protocol.reopened == 1
    assert protocol.data_to_send().startswith(b"POST /broadcast/000/abc/xhr_streaming HTTP/1.1\r\n")
    assert list(protocol.receive_data(STREAM_HEAD + chunk(b"h" * 2048 + b"\n" + array(b"1:2:2")))) == [
        Delivered(1, ())]


def test_a_stream_that_ends_at_the_close_is_reopened_on_a_new_connection():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "eventsource")
    protocol.data_to_send()
    assert list(protocol.receive_data(b"HTTP/1.0 200 OK\r\n\r\n\r\ndata: o\r\n\r\n")) == [OPENED]
    assert list(protocol.receive_closed()) == [NEW_CONNECTION]
    assert protocol.reopened == 1 and protocol.data_to_send().startswith(b"GET /broadcast/000/abc/eventsource ")
    assert list(protocol.receive_data(b"HTTP/1.0 200 OK\r\n\r\n\r\ndata: a[\"1:1:1\"]\r\n\r\n")) == [Delivered(1, ())]


def test_polls_are_made_again_at_once_on_the_connection_while_it_may_carry_them():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "xhr-polling")
    request = protocol.data_to_send()
    assert list(protocol.receive_data(poll(b"o\n"))) == [OPENED]
    assert protocol.data_to_send() == request
    assert list(protocol.receive_data(poll(array(b"1:1:1", b"2:1:1")))) == [Delivered(2, ())]
    assert protocol.data_to_send() == request
    assert list(protocol.receive_data(poll(b"h\n", close=True))) == [NEW_CONNECTION]
    assert protocol.data_to_send() == request and protocol.reopened == 3


def test_a_close_frame_ends_the_session_and_nothing_is_asked_again():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "xhr-polling")
    protocol.data_to_send()
    protocol.receive_data(poll(b"o\n"))
    protocol.data_to_send()
    assert list(protocol.receive_data(poll(b'c[3000,"Go away!"]\n'))) == [Closed('SockJS close [3000,"Go away!"]')]
    assert protocol.data_to_send() == b""


@pytest.mark.parametrize("answer, reason", [
    (poll(b"h\n"), "the xhr-polling response ended before the open frame"),
    (b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", "HTTP 404 on xhr-polling"),
    (b"SSH-2.0\r\n\r\n", "not an HTTP response"),
])
def test_a_session_that_does_not_open_closes_the_client(answer, reason):
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "xhr-polling")
    events = protocol.receive_data(answer)
    assert len(events) == 1 and reason in events[0].reason and not protocol.alive


def test_a_connection_closed_before_an_answer_is_retried_once_if_it_carried_one_before():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "xhr-polling")
    protocol.data_to_send()
    protocol.receive_data(poll(b"o\n"))
    assert list(protocol.receive_closed()) == [NEW_CONNECTION]  # the server dropped the kept-alive connection
    assert protocol.data_to_send()
    assert list(protocol.receive_closed()) == [Closed("closed by the server")]


def test_a_stream_cut_inside_a_response_closes_the_client():
    protocol = streaming()
    protocol.receive_data(b"5\r\nab")
    assert list(protocol.receive_closed()) == [Closed("the connection closed inside the response")]


def test_the_send_connection_is_replaced_when_the_server_ends_it_and_a_lost_send_is_made_once_more():
    protocol = streaming()
    protocol.send(1000)
    first = protocol.sends_to_send()
    protocol.send(2000)
    assert list(protocol.send_answer_data(b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n")) == [
        NEW_SEND_CONNECTION]
    second = protocol.sends_to_send()
    assert sent_messages(first) == ["7:1:1000"] and sent_messages(second) == ["7:2:2000"]
    assert list(protocol.send_closed()) == []
    assert protocol.sends_to_send() == second
    assert list(protocol.send_closed()) == [Closed("xhr_send: the connection closed before the answer")]


def test_an_idle_send_connection_closed_is_no_event():
    protocol = streaming()
    assert list(protocol.send_closed()) == [] and protocol.sends_to_send() == b""


def test_a_listener_times_every_message_of_the_feed():
    protocol = HttpSessionProtocol.listener("h:1", SESSION, "htmlfile")
    assert b"GET /broadcast/000/abc/htmlfile?c=_sockjs_load " in protocol.data_to_send()
    protocol.receive_data(STREAM_HEAD + chunk(b"<html>\r\n\r\n") + chunk(b'<script>\np("o");\n</script>\r\n'))
    feed = payload.message(payload.FEED_ID, 1, 1000)
    frame = b'<script>\np("a[\\"' + feed + b'\\",\\"7:1:5\\"]");\n</script>\r\n'
    assert list(protocol.receive_data(chunk(frame))) == [Delivered(2, [(1, 1000)])]


@pytest.mark.parametrize("transport, opening", [
    ("xhr-streaming", STREAM_HEAD + chunk(b"h" * 2048 + b"\n") + chunk(b"o\n")),
    ("xhr-polling", poll(b"o\n")),
    ("jsonp-polling", poll(b'/**/_sockjs_load("o");\r\n')),
])
def test_a_first_message_is_sent_as_the_session_opens_and_what_follows_waits_for_its_answer(transport, opening):
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, transport)
    protocol.first_message = payload.token_message("a.b.c")
    protocol.data_to_send()
    assert protocol.sends_to_send() == b""
    assert list(protocol.receive_data(opening)) == [OPENED]
    request = protocol.sends_to_send()
    body = request.partition(b"\r\n\r\n")[2].decode()
    sent = json.loads(urllib.parse.parse_qs(body)["d"][0] if transport == "jsonp-polling" else body)
    assert sent == ['{"token":"a.b.c"}'] and protocol.pending == {}
    protocol.send(1000)
    assert protocol.sends_to_send() == b"", "one send in flight: the token's"


def test_the_query_goes_on_every_request_and_positions_are_counted_in_envelopes():
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, "xhr-streaming", "positions=1", True)
    assert protocol.data_to_send().startswith(b"POST /broadcast/000/abc/xhr_streaming?positions=1 HTTP/1.1\r\n")
    protocol.receive_data(STREAM_HEAD + chunk(b"h" * 2048 + b"\n") + chunk(b"o\n"))
    protocol.send(1000)
    assert protocol.sends_to_send().startswith(b"POST /broadcast/000/abc/xhr_send?positions=1 HTTP/1.1\r\n")
    frame = b'a[{"c":"open","epoch":"e","o":"0"},{"o":"1","d":"7:1:1000"}]\n'
    assert list(protocol.receive_data(chunk(frame))) == [Delivered(1, [(1, 1000)])]


@pytest.mark.parametrize("transport, answer", [
    ("xhr-polling", poll(b"o\n")),
    ("xhr-streaming", STREAM_HEAD + chunk(b"h" * 2048 + b"\n") + chunk(b"o\n")),
])
def test_an_open_frame_on_an_open_session_ends_it_as_lost(transport, answer):
    """A broker restarted on its port, or a session expired, answers a request of the old
    session with a new one's open frame: the client's session is gone (sockjs-client closes
    with 1006 "Server lost session"), not carried on under a new one."""
    protocol = HttpSessionProtocol(CLIENT, "h:1", SESSION, transport)
    protocol.data_to_send()
    if transport == "xhr-polling":
        assert list(protocol.receive_data(poll(b"o\n"))) == [OPENED]
        protocol.data_to_send()
    else:
        assert list(protocol.receive_data(answer)) == [OPENED]
        protocol.receive_data(b"0\r\n\r\n")  # the stream ends: reopened on the session
        protocol.data_to_send()
    assert list(protocol.receive_data(answer)) == [Closed("server lost session")]
    assert protocol.data_to_send() == b""
