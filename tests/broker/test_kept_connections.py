"""Polls and sends on kept-alive connections: after its first poll, the broker
answers a connection's polls itself, a send on a new connection or a kept one
too, and gives Tornado anything else, unread."""

import json
import socket
import time

import pytest

from sockjs_clients import TIMEOUT, WebSocketClient, session_url, wait_until

AUTH = {"Authorization": "Bearer s3cret"}


class KeptConnection:
    """One raw keep-alive connection to a broker, for requests written as bytes."""

    def __init__(self, broker):
        host, port = broker.origin[len("http://"):].split(":")
        self.host = "%s:%s" % (host, port)
        self.prefix = broker.url[len(broker.origin):]
        self.sock = socket.create_connection((host, int(port)), timeout=TIMEOUT)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = b""

    def request(self, method, target, body=b"", *headers):
        """The bytes of a request as a browser's XHR sends it."""
        lines = ["%s %s HTTP/1.1" % (method, target), "Host: " + self.host, "Connection: keep-alive",
                 "Content-Length: %d" % len(body), *headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode() + body

    def poll(self, session, *headers, transport="xhr", query=""):
        if transport == "jsonp":
            return self.request("GET", session + "/jsonp?%sc=callback" % (query + "&" if query else ""), b"",
                                *headers)
        return self.request("POST", session + "/xhr" + ("?" + query if query else ""), b"", *headers)

    def send(self, data):
        self.sock.sendall(data)

    def response(self):
        """(status, headers as a dict of lower-case names, body) of the next response."""
        status, headers, body = self.response_as_sent()
        return status, dict(headers), body

    def response_as_sent(self):
        """(status, headers as (lower-case name, value) pairs in their order, body) of the next response."""
        while b"\r\n\r\n" not in self.buffer:
            self._read()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = [(name.lower(), value.strip()) for name, value in (line.split(":", 1) for line in lines[1:])]
        length = int(dict(headers).get("content-length", 0))
        while len(self.buffer) < length:
            self._read()
        body, self.buffer = self.buffer[:length], self.buffer[length:]
        return int(lines[0].split()[1]), headers, body.decode()

    def _read(self):
        data = self.sock.recv(65536)
        assert data, "the broker closed the connection"
        self.buffer += data

    def closed_by_broker(self):
        """Whether the broker closes the connection (within the timeout) with nothing more to say."""
        self.sock.settimeout(TIMEOUT)
        return self.sock.recv(1) == b""

    def close(self):
        self.sock.close()


@pytest.fixture
def kept(broker):
    opened = []

    def kept_connection(b=broker):
        connection = KeptConnection(b)
        opened.append(connection)
        return connection

    yield kept_connection
    for connection in opened:
        connection.close()


def new_session(broker):
    return session_url(broker.url)[len(broker.origin):]


def answer(connection, session, *headers, transport="xhr", query=""):
    connection.send(connection.poll(session, *headers, transport=transport, query=query))
    return connection.response()


def frame_of(transport, body):
    """The SockJS frame an answer's ``body`` carries."""
    if transport == "jsonp":
        assert body.startswith("/**/callback(") and body.endswith(");\r\n"), body
        return json.loads(body[len("/**/callback("):-len(");\r\n")])
    assert body.endswith("\n"), body
    return body[:-1]


@pytest.mark.parametrize("transport", ["xhr", "jsonp"])
def test_every_message_reaches_polls_on_one_connection_in_order(broker, kept, transport):
    connection = kept()
    session = new_session(broker)
    status, headers, body = answer(connection, session, transport=transport)
    assert (status, frame_of(transport, body)) == (200, "o")
    assert "server" in headers, "Tornado answers a connection's first poll"
    sent = ["message %d </script>" % n for n in range(50)]
    received = []
    with WebSocketClient(broker.url) as publisher:
        for message in sent:
            publisher.send(message)
        while len(received) < len(sent):
            status, headers, body = answer(connection, session, transport=transport)
            assert status == 200 and headers["content-type"] == "application/javascript; charset=UTF-8"
            assert "server" not in headers, "the broker itself answers the polls that follow"
            assert int(headers["content-length"]) == len(body)
            assert transport != "jsonp" or "</script>" not in body, "a message cannot end the script"
            received.extend(json.loads(frame_of(transport, body)[1:]))
    assert received == sent


@pytest.mark.parametrize("transport", ["xhr", "jsonp"])
def test_a_resuming_clients_polls_are_kept_with_its_query(broker, kept, transport):
    """The shipped client asks for positions on every request's URL: its polls too are the broker's."""
    connection = kept()
    session = new_session(broker)
    query = "positions=1"
    status, headers, body = answer(connection, session, transport=transport, query=query)
    assert (status, frame_of(transport, body), "server" in headers) == (200, "o", True)
    delivered = []
    with WebSocketClient(broker.url) as publisher:
        publisher.send("counter 42")
        while "counter 42" not in delivered:
            status, headers, body = answer(connection, session, transport=transport, query=query)
            assert status == 200 and "server" not in headers, "the broker itself answers the polls that follow"
            delivered += [envelope.get("d") for envelope in json.loads(frame_of(transport, body)[1:])]


def test_a_jsonp_poll_with_a_bad_callback_on_a_kept_connection_is_refused(broker, kept):
    connection = kept()
    session = new_session(broker)
    assert frame_of("jsonp", answer(connection, session, transport="jsonp")[2]) == "o"
    connection.send(connection.request("GET", session + "/jsonp?c=alert(1)"))
    assert connection.response()[:3:2] == (500, 'invalid "callback" parameter')


def test_a_send_a_new_session_and_info_on_a_kept_connection_are_answered_as_ever(broker, kept):
    connection = kept()
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    connection.send(connection.request("POST", session + "/xhr_send", b'["from the kept connection"]'))
    assert connection.response()[0] == 204
    assert answer(connection, session)[2] == 'a["from the kept connection"]\n'
    other = new_session(broker)
    assert answer(connection, other)[2] == "o\n"
    connection.send(connection.request("GET", connection.prefix + "/info"))
    status, _, body = connection.response()
    assert status == 200 and json.loads(body)["websocket"] is True
    connection.send(connection.request("POST", session + "/xhr_send", b""))
    assert connection.response()[:3:2] == (500, "Payload expected.")
    # And the polls go on on it.
    assert broker.request("POST", "/publish", b"to both", AUTH)[0] == 200
    assert answer(connection, session)[2] == 'a["to both"]\n'
    assert answer(connection, other)[2] == 'a["to both"]\n'


def test_a_client_gone_while_its_poll_waits_closes_its_session(broker, kept):
    connection = kept()
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    connection.send(connection.poll(session))
    wait_until(lambda: broker.stats()["sessions"] == 1)
    connection.close()
    again = kept()
    wait_until(lambda: answer(again, session)[2] == 'c[1002,"Connection interrupted"]\n')


def test_a_second_poll_of_a_waiting_session_is_told_another_connection_is_open(broker, kept):
    first, second = kept(), kept()
    session, own = new_session(broker), new_session(broker)
    assert answer(first, session)[2] == "o\n"
    assert answer(second, own)[2] == "o\n"
    first.send(first.poll(session))
    assert answer(second, session)[2] == 'c[2010,"Another connection still open"]\n'
    assert broker.request("POST", "/publish", b"still served", AUTH)[0] == 200
    assert first.response()[2] == 'a["still served"]\n'


def test_pipelined_polls_are_answered_in_turn(broker, kept):
    connection = kept()
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    connection.send(connection.poll(session) * 2)
    for n in range(2):
        assert broker.request("POST", "/publish", str(n).encode(), AUTH)[0] == 200
        assert connection.response()[2] == 'a["%d"]\n' % n


def test_a_poll_whose_head_comes_in_pieces_is_answered(broker, kept):
    connection = kept()
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    assert broker.request("POST", "/publish", b"in pieces", AUTH)[0] == 200
    request = connection.poll(session)
    connection.send(request[:20])
    time.sleep(0.05)  # the rest in a segment of its own
    connection.send(request[20:])
    assert connection.response()[2] == 'a["in pieces"]\n'


def test_an_unlisted_page_s_poll_is_refused_on_a_kept_connection(start_broker, kept):
    broker = start_broker("--allowed-origins", "https://good.example")
    connection = kept(broker)
    session = new_session(broker)
    status, headers, body = answer(connection, session, "Origin: https://good.example")
    assert body == "o\n" and headers["access-control-allow-origin"] == "https://good.example"
    status, headers, _ = answer(connection, session, "Origin: https://evil.example")
    assert status == 403


def test_a_kept_poll_without_a_host_is_answered_by_tornado(start_broker, kept):
    """Without a Host, an Origin has nothing to be compared with: Tornado answers, 400."""
    broker = start_broker("--allowed-origins", "https://good.example")
    connection = kept(broker)
    session = new_session(broker)
    assert answer(connection, session, "Origin: https://good.example")[2] == "o\n"
    connection.send(("POST %s/xhr HTTP/1.1\r\nOrigin: https://good.example\r\n"
                     "Content-Length: 0\r\n\r\n" % session).encode())
    assert connection.response()[0] == 400


def test_a_kept_connection_is_timed_between_polls_not_during_one_and_released(start_broker, kept):
    broker = start_broker("--header-timeout", "1", "--heartbeat-delay", "2")
    connection = kept(broker)
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    assert answer(connection, session)[2] == "h\n", "a waiting poll is not cut by the header timeout"
    assert connection.closed_by_broker(), "an idle kept connection is"
    wait_until(lambda: broker.stats()["tcp_connections"] == 1)  # the stats request's own


def test_a_head_given_back_to_tornado_keeps_the_deadline_timed_from_the_answer(start_broker, kept):
    """A head not whole yet goes to Tornado, which must not time it anew: closed about the
    header timeout after the answer, not the header timeout after the head's first bytes."""
    broker = start_broker("--header-timeout", "4")
    connection = kept(broker)
    assert answer(connection, new_session(broker))[2] == "o\n"
    answered = time.monotonic()
    time.sleep(2.8)  # most of the header timeout, before the next head begins
    connection.send(("GET %s/info HTTP/1.1\r\nHost: %s\r\n" % (connection.prefix, connection.host)).encode())
    assert connection.closed_by_broker()
    # Carried: closed 4 s after the answer, and within a sweep (1 s); timed anew, 6.8 s at least.
    assert time.monotonic() - answered < 6.3


def test_behind_a_proxy_each_kept_poll_names_its_client(start_broker, kept):
    broker = start_broker("--max-connections-per-ip", "2", "--client-address-header", "X-Forwarded-For",
                          "--publish-token", "s3cret")
    connection = kept(broker)
    session = new_session(broker)
    assert answer(connection, session, "X-Forwarded-For: 10.0.0.1")[2] == "o\n"
    assert broker.request("POST", "/publish", b"one", AUTH)[0] == 200
    status, headers, body = answer(connection, session, "X-Forwarded-For: 6.6.6.6, 10.0.0.2")
    assert (status, body) == (200, 'a["one"]\n') and "server" not in headers
    # 10.0.0.1 at its limit: a kept poll naming it is refused, and its connection closed.
    others = [kept(broker) for _ in range(2)]
    for other in others:
        other.send(other.request("GET", "/healthz", b"", "X-Forwarded-For: 10.0.0.1"))
        assert other.response()[0] == 200
    status, headers, body = answer(connection, session, "X-Forwarded-For: 10.0.0.1")
    assert status == 503 and "from your address" in body and headers["connection"] == "close"
    assert connection.closed_by_broker()
    assert broker.stats()["refused"]["per_ip"] == 1
    for other in others:
        other.close()
    wait_until(lambda: broker.stats()["tcp_connections"] == 1)  # the stats request's own


def test_a_request_pipelined_behind_a_long_answer_waits_for_all_of_it(broker, kept):
    connection = kept()
    connection.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    session = new_session(broker)
    assert answer(connection, session)[2] == "o\n"
    sent = ["%03d %s" % (n, "x" * 2000) for n in range(100)]
    with WebSocketClient(broker.url) as publisher:
        for message in sent:
            publisher.send(message)
        assert publisher.collect(len(sent)) == sent
    connection.send(connection.poll(session) + connection.request("GET", connection.prefix + "/info"))
    wait_until(lambda: broker.stats()["slow_consumers"]["behind"] == 1)  # the answer is held back
    status, headers, body = connection.response()
    assert status == 200 and json.loads(body[1:]) == sent
    status, headers, body = connection.response()
    assert status == 200 and json.loads(body)["websocket"] is True


def send_on(connection, session, body, *headers, suffix="xhr_send"):
    connection.send(connection.request("POST", session + "/" + suffix, body, *headers))
    return connection.response()


def test_sends_on_a_new_connection_are_answered_by_the_broker_and_the_connection_kept(broker, kept):
    poller = kept()
    session = new_session(broker)
    assert answer(poller, session)[2] == "o\n"
    sender = kept()
    for n in range(3):
        status, headers, body = send_on(sender, session, b'["sent %d"]' % n, "Origin: https://example.com")
        assert (status, body, headers["content-type"]) == (204, "", "text/plain; charset=UTF-8")
        assert headers["access-control-allow-origin"] == "https://example.com"
        assert "server" not in headers, "the broker itself answers a send, the first one on a connection too"
    status, headers, body = send_on(kept(), session, b"d=%5B%22sent%203%22%5D",
                                 "Content-Type: application/x-www-form-urlencoded", suffix="jsonp_send")
    assert (status, body, "server" in headers) == (200, "ok", False)
    received = []
    while len(received) < 4:
        received.extend(json.loads(frame_of("xhr", answer(poller, session)[2])[1:]))
    assert received == ["sent 0", "sent 1", "sent 2", "sent 3"]
    sender.send(sender.request("GET", sender.prefix + "/info"))
    status, headers, body = sender.response()
    assert status == 200 and "server" in headers and json.loads(body)["websocket"] is True


def test_a_send_the_broker_does_not_take_is_answered_by_tornado_as_ever(start_broker, kept):
    broker = start_broker("--allowed-origins", "https://good.example", "--max-message-size", "100")
    poller = kept(broker)
    session = new_session(broker)
    assert answer(poller, session, "Origin: https://good.example")[2] == "o\n"
    assert send_on(kept(broker), session, b'["x"', "Origin: https://good.example")[:3:2] == (
        500, "Broken JSON encoding.")
    assert send_on(kept(broker), session, b'{"x": 1}')[:3:2] == (500, "Payload expected.")
    assert send_on(kept(broker), session, b'["x"]', "Origin: https://evil.example")[0] == 403
    assert send_on(kept(broker), new_session(broker), b'["x"]')[0] == 404
    pieces = kept(broker)
    request = pieces.request("POST", session + "/xhr_send", b'["in pieces"]')
    pieces.send(request[:-5])
    time.sleep(0.05)  # the rest in a segment of its own
    pieces.send(request[-5:])
    assert pieces.response()[0] == 204
    assert answer(poller, session, "Origin: https://good.example")[2] == 'a["in pieces"]\n'
    assert send_on(kept(broker), session, b'["%s"]' % (b"x" * 200))[0] == 413
    assert answer(poller, session)[2] == 'c[1009,"Message too big"]\n'


ORIGINS = {"no Origin": (), "an Origin": ("Origin: https://example.com",)}


def as_sent(connection, request):
    """(status, headers but Date and Server as sent, body) of the answer to ``request`` on
    ``connection``, and whether Tornado wrote it (its ``Server``)."""
    connection.send(request)
    status, headers, body = connection.response_as_sent()
    return (status, [header for header in headers if header[0] not in ("date", "server")], body), \
        "server" in dict(headers)


def tornado_s(connection):
    """``connection``, once Tornado has answered a request on it (``/info``): Tornado
    answers the next too. (A new connection with nothing sent yet may be the broker's.)"""
    assert as_sent(connection, connection.request("GET", connection.prefix + "/info"))[1]
    return connection


@pytest.mark.parametrize("origin", sorted(ORIGINS))
@pytest.mark.parametrize("transport", ["xhr", "jsonp"])
def test_tornado_and_the_broker_answer_a_poll_alike(broker, kept, transport, origin):
    """A kept connection's next poll is the broker's, one on a connection Tornado serves
    Tornado's: the same answer, but Tornado's Date and Server."""
    headers = ORIGINS[origin]
    by_broker, by_tornado = kept(), tornado_s(kept())
    session, other = new_session(broker), new_session(broker)
    assert frame_of(transport, as_sent(by_broker, by_broker.poll(session, *headers, transport=transport))[0][2]) == "o"
    opener = kept()
    assert frame_of(transport, as_sent(opener, opener.poll(other, transport=transport))[0][2]) == "o"
    assert broker.request("POST", "/publish", b"to both", AUTH)[0] == 200
    kept_answer, tornado_wrote = as_sent(by_broker, by_broker.poll(session, *headers, transport=transport))
    assert not tornado_wrote, "the broker answers a kept connection's next poll"
    tornado_answer, tornado_wrote = as_sent(by_tornado, by_tornado.poll(other, *headers, transport=transport))
    assert tornado_wrote
    assert frame_of(transport, kept_answer[2]) == 'a["to both"]'
    assert kept_answer == tornado_answer


@pytest.mark.parametrize("origin", sorted(ORIGINS))
@pytest.mark.parametrize("suffix, body, content_type", [
    ("xhr_send", b'["x"]', ()),
    ("jsonp_send", b"d=%5B%22x%22%5D", ("Content-Type: application/x-www-form-urlencoded",)),
], ids=["xhr_send", "jsonp_send"])
def test_tornado_and_the_broker_answer_a_send_alike(broker, kept, suffix, body, content_type, origin):
    """A send on a new connection is the broker's, one on a connection Tornado serves
    Tornado's: the same answer, but Tornado's Date and Server."""
    headers = ORIGINS[origin] + content_type
    poller = kept()
    session = new_session(broker)
    assert answer(poller, session)[2] == "o\n"
    by_broker, by_tornado = kept(), tornado_s(kept())
    kept_answer, tornado_wrote = as_sent(by_broker, by_broker.request("POST", session + "/" + suffix, body, *headers))
    assert not tornado_wrote, "the broker answers a send on a new connection"
    tornado_answer, tornado_wrote = as_sent(by_tornado, by_tornado.request("POST", session + "/" + suffix, body,
                                                                           *headers))
    assert tornado_wrote
    assert kept_answer == tornado_answer
    assert answer(poller, session)[2] == 'a["x","x"]\n'


def test_a_new_connection_that_sends_nothing_is_timed_and_released(start_broker, kept):
    broker = start_broker("--header-timeout", "1")
    silent = kept(broker)
    assert silent.closed_by_broker()
    wait_until(lambda: broker.stats()["tcp_connections"] == 1)  # the stats request's own


def test_behind_a_proxy_a_send_on_a_new_connection_names_its_client(start_broker, kept):
    broker = start_broker("--max-connections-per-ip", "2", "--client-address-header", "X-Forwarded-For")
    poller = kept(broker)
    session = new_session(broker)
    assert answer(poller, session, "X-Forwarded-For: 10.0.0.1")[2] == "o\n"
    # 10.0.0.2 at its limit: a send naming it is refused, and its connection closed.
    others = [kept(broker) for _ in range(2)]
    for other in others:
        other.send(other.request("GET", "/healthz", b"", "X-Forwarded-For: 10.0.0.2"))
        assert other.response()[0] == 200
    refused = kept(broker)
    status, headers, body = send_on(refused, session, b'["x"]', "X-Forwarded-For: 10.0.0.2")
    assert status == 503 and "from your address" in body and headers["connection"] == "close"
    assert refused.closed_by_broker()
    status, headers, _ = send_on(kept(broker), session, b'["y"]', "X-Forwarded-For: 6.6.6.6, 10.0.0.3")
    assert status == 204 and "server" not in headers
    assert answer(poller, session, "X-Forwarded-For: 10.0.0.1")[2] == 'a["y"]\n'
    assert broker.stats()["refused"]["per_ip"] == 1
