"""Minimal real SockJS clients, one per transport, for tests.

Each client speaks the wire protocol itself (websocket-client for websockets,
``http.client`` for the HTTP transports) and offers the same interface:
``open()`` waits for the ``o`` frame, ``send(*messages)``, ``receive()``
returns the messages of the next ``a[...]`` frame (heartbeats skipped) and
raises :class:`Closed` on a ``c[...]`` frame, ``collect(n)`` gathers n messages.
"""

import http.client
import json
import random
import socket
import string
import struct
import time
import urllib.parse

import websocket

from loadtest.framing.endpoints import with_query
from loadtest.framing.websocket_frames import handshake_request

TIMEOUT = 5.0


class Closed(Exception):
    """The server sent a SockJS close frame, or the connection ended."""

    def __init__(self, code=None, reason=None):
        super().__init__(code, reason)
        self.code = code
        self.reason = reason


def closed_with(client):
    """The close code and reason ``client`` receives, after any messages."""
    try:
        while True:
            client.receive()
    except Closed as closed:
        return closed.code, closed.reason


def raw_websocket(origin, path, then=b"", receive_buffer=None):
    """A plain socket that sent a websocket upgrade for ``path`` (and ``then``
    in the same write) and read its 101 answer; returns the socket and the
    bytes read past the answer, a bytearray to read further frames into.
    ``receive_buffer`` sets SO_RCVBUF first, for a client that reads little."""
    host, port = origin[len("http://"):].split(":")
    sock = socket.socket()
    if receive_buffer:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, receive_buffer)
    sock.settimeout(TIMEOUT)
    sock.connect((host, int(port)))
    sock.sendall(handshake_request("%s:%s" % (host, port), path, b"dGhlIHNhbXBsZSBub25jZQ==") + then)
    response = b""
    while b"\r\n\r\n" not in response:
        response += sock.recv(4096)
    head, _, rest = response.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 101"), head
    return sock, bytearray(rest)


def read_to_end(sock, received, timeout=5.0):
    """Read ``sock`` into ``received`` (a bytearray) until the broker closes it;
    socket.timeout if a read waits longer than ``timeout`` seconds."""
    sock.settimeout(timeout)
    while True:
        data = sock.recv(65536)
        if not data:
            return received
        received += data


def fall_behind(broker, publisher):
    """Broadcast numbered messages through ``publisher`` (a WebSocketClient)
    until ``broker`` holds a backlog for a client that does not read; returns
    how many were sent."""
    sent = 0
    while broker.stats()["slow_consumers"]["behind"] == 0:
        assert sent < 20000, "the broker never fell behind"
        for _ in range(500):
            publisher.send("%020d" % sent)
            assert publisher.receive() == ["%020d" % sent]
            sent += 1
    return sent


def stalled_websocket(url):
    """A SockJS websocket under ``url`` whose reader never reads, with a tiny receive buffer."""
    ws = websocket.create_connection("ws" + session_url(url)[4:] + "/websocket", timeout=TIMEOUT,
                                     sockopt=((socket.SOL_SOCKET, socket.SO_RCVBUF, 4096),))
    assert ws.recv() == "o"
    return ws


def wait_until(predicate, timeout=TIMEOUT, interval=0.01):
    """Poll ``predicate`` until it is true; fail with its last value after ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        assert time.monotonic() < deadline, "condition still false after %.1fs" % timeout
        time.sleep(interval)


def session_url(base, server_id=None):
    """A new session's URL under ``base``, with ``server_id`` (a random one by default)."""
    session = "".join(random.choice(string.ascii_lowercase + string.digits) for _ in range(12))
    return "%s/%s/%s" % (base, server_id or "%03d" % random.randint(0, 999), session)


def parse_frame(frame):
    """Messages of an ``a`` frame; [] for ``o`` and ``h``; raises Closed for ``c``."""
    kind, body = frame[:1], frame[1:]
    if kind == "a":
        return json.loads(body)
    if kind == "c":
        raise Closed(*json.loads(body))
    if kind in ("o", "h"):
        return []
    raise AssertionError("not a SockJS frame: %r" % frame[:80])


class Client:
    transport = None

    def __init__(self, base, timeout=TIMEOUT, server_id=None, query="", tls=None):
        """``query`` (``"positions=1"``) goes on every URL the client requests,
        as sockjs-client carries the query of its base URL; ``tls`` is the
        ``ssl.SSLContext`` of an ``https`` base."""
        self.base = base
        self.timeout = timeout
        self.query = query
        self.tls = tls
        self.url = session_url(base, server_id)
        self._split = urllib.parse.urlsplit(base)

    def target(self, url):
        """The request target of ``url``: its path, and the client's query."""
        return with_query(urllib.parse.urlsplit(url).path if "://" in url else url, self.query)

    def open(self):
        frame = self.read_frame()
        assert frame == "o", "expected open frame, got %r" % frame
        return self

    def receive(self):
        while True:
            messages = parse_frame(self.read_frame())
            if messages:
                return messages

    def collect(self, count):
        messages = []
        deadline = time.monotonic() + self.timeout
        while len(messages) < count:
            assert time.monotonic() < deadline, "got %d of %d messages" % (len(messages), count)
            messages.extend(self.receive())
        return messages

    def send(self, *messages):
        self.post(self.url + "/xhr_send", json.dumps(list(messages)))

    def http(self):
        if self.tls is not None:
            return http.client.HTTPSConnection(self._split.hostname, self._split.port, timeout=self.timeout,
                                               context=self.tls)
        return http.client.HTTPConnection(self._split.hostname, self._split.port, timeout=self.timeout)

    def post(self, url, body, headers=None, expect=204):
        conn = self.http()
        try:
            conn.request("POST", self.target(url), body=body, headers=headers or {})
            response = conn.getresponse()
            data = response.read()
            assert response.status == expect, (response.status, data)
            return data
        finally:
            conn.close()

    def close(self):
        pass

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()


class WebSocketClient(Client):
    transport = "websocket"

    def __init__(self, base, timeout=TIMEOUT, server_id=None, query="", tls=None, **options):
        """``options`` go to ``websocket.create_connection`` (``header``, ``socket``)."""
        super().__init__(base, timeout, server_id, query, tls)
        if tls is not None:
            options["sslopt"] = {"context": tls}
        self.ws = websocket.create_connection(self.ws_url(), timeout=timeout, **options)

    def ws_url(self):
        """``ws://`` or, from an ``https`` base, ``wss://``."""
        return "ws" + with_query(self.url[4:] + "/websocket", self.query)

    def read_frame(self):
        """The next text frame; Closed with the websocket close code at the end."""
        while True:
            try:
                frame = self.ws.recv_frame()
            except (websocket.WebSocketConnectionClosedException, ConnectionError):
                raise Closed() from None
            if frame.opcode == websocket.ABNF.OPCODE_CLOSE:
                code = struct.unpack("!H", frame.data[:2])[0] if len(frame.data) >= 2 else None
                raise Closed(code, frame.data[2:].decode("utf-8", "replace"))
            if frame.opcode == websocket.ABNF.OPCODE_TEXT:
                return frame.data.decode()

    def send(self, *messages):
        self.ws.send(json.dumps(list(messages)))

    def close(self):
        self.ws.close()


class RawWebSocketClient(WebSocketClient):
    """The raw ``/websocket`` endpoint: no SockJS framing, one message per frame."""

    transport = "rawwebsocket"

    def ws_url(self):
        return "ws" + with_query(self.base[4:] + "/websocket", self.query)

    def open(self):
        return self

    def receive(self):
        return [self.read_frame()]

    def send(self, *messages):
        for message in messages:
            self.ws.send(message)


class _StreamingClient(Client):
    method = "GET"
    suffix = None

    def open(self):
        self.request()
        return super().open()

    def reopen(self):
        """Open the session's next stream, on a new connection, after the last one ended."""
        self.close()
        self.request()
        return self

    def request(self):
        """Send the stream's request and read the answer's prelude."""
        self.conn = self.http()
        self.conn.request(self.method, self.target(urllib.parse.urlsplit(self.url).path + self.suffix))
        # A response that ends its connection takes the socket from the
        # HTTPConnection: keep it, and close it through the response.
        self.sock = self.conn.sock
        self.response = self.conn.getresponse()
        assert self.response.status == 200, self.response.status
        self.read_prelude()

    def readline(self):
        line = self.response.readline()
        if not line:
            raise Closed()
        return line.decode()

    def close(self):
        self.response.close()
        self.conn.close()


class XhrStreamingClient(_StreamingClient):
    transport = "xhr_streaming"
    method = "POST"
    suffix = "/xhr_streaming"

    def read_prelude(self):
        assert self.readline() == "h" * 2048 + "\n"

    def read_frame(self):
        return self.readline().rstrip("\n")


class EventSourceClient(_StreamingClient):
    transport = "eventsource"
    suffix = "/eventsource"

    def read_prelude(self):
        assert self.readline() == "\r\n"

    def read_frame(self):
        line = self.readline()
        assert line.startswith("data: "), line
        assert self.readline() == "\r\n"
        return line[len("data: "):].rstrip("\r\n")


class HtmlFileClient(_StreamingClient):
    transport = "htmlfile"
    suffix = "/htmlfile?c=callback"

    def read_prelude(self):
        while self.readline() != "\r\n":
            pass

    def read_frame(self):
        while True:
            line = self.readline()
            if line.startswith("p("):
                return json.loads(line[2:line.rindex(")")])


class _PollingClient(Client):
    """Polls on one kept-alive connection, as a browser does (sends on others);
    on a connection each, if not ``keep_alive``."""

    keep_alive = True
    polls = None

    def poll(self, method, url, body=None):
        """The body (str) of a 200 answer to a poll of ``url``."""
        if self.polls is None:
            self.polls = self.http()
        self.polls.request(method, self.target(url), body=body)
        response = self.polls.getresponse()
        data = response.read().decode()
        if not self.keep_alive:
            self.close()
        assert response.status == 200, (response.status, data)
        return data

    def close(self):
        if self.polls is not None:
            self.polls.close()
            self.polls = None


class XhrPollingClient(_PollingClient):
    transport = "xhr"

    def read_frame(self):
        return self.poll("POST", self.url + "/xhr", "").rstrip("\n")


class JsonpClient(_PollingClient):
    transport = "jsonp"

    def read_frame(self):
        body = self.poll("GET", urllib.parse.urlsplit(self.url).path + "/jsonp?c=callback")
        start = body.index("(") + 1
        return json.loads(body[start:body.rindex(")")])

    def send(self, *messages):
        body = urllib.parse.urlencode({"d": json.dumps(list(messages))})
        headers = {"Content-Type": "application/x-www-form-urlencoded"}
        assert self.post(self.url + "/jsonp_send", body, headers, expect=200) == b"ok"


STREAMING = [XhrStreamingClient, EventSourceClient, HtmlFileClient]
ALL = [WebSocketClient, RawWebSocketClient, XhrStreamingClient, EventSourceClient,
       HtmlFileClient, XhrPollingClient, JsonpClient]
