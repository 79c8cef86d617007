"""What the hostile-client and shutdown tests watch: the broker's descriptors,
memory, CPU and log, a canary client that must keep its round trip, raw sockets
that misbehave on purpose, and the requests that would open a session on each
transport (which admission control and a drain refuse). Loopback only."""

import os
import socket
import time

from loadtest.procstat import cpu_seconds

from sockjs_clients import WebSocketClient, session_url

UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}

def open_fds(pid):
    """The descriptors ``pid`` holds open."""
    return len(os.listdir("/proc/%d/fd" % pid))


def address(broker):
    host, port = broker.origin[len("http://"):].split(":")
    return host, int(port)


def connect(broker, source="127.0.0.1"):
    """A TCP connection to the broker from ``source`` (any 127.0.0.0/8 address)."""
    sock = socket.socket()
    sock.settimeout(5)
    sock.bind((source, 0))
    sock.connect(address(broker))
    return sock


def read_response(sock):
    """(status, headers text, body) of one response on ``sock``; the body is what
    Content-Length says, or everything up to the close (none after 101, 204 or 304)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        assert chunk, "closed before a response; got %r" % data[:200]
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    length = 0 if status in (101, 204, 304) else next(
        (int(line.split(":", 1)[1]) for line in lines[1:] if line.lower().startswith("content-length:")), None)
    while length is None or len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return status, "\r\n".join(lines[1:]), body.decode("utf-8", "replace")


def get(broker, path, source="127.0.0.1", headers=None, sock=None):
    """(status, headers text, body) of ``GET path`` on a new connection from
    ``source``, or on ``sock`` (kept alive)."""
    own = sock is None
    sock = sock or connect(broker, source)
    try:
        extra = "".join("%s: %s\r\n" % item for item in (headers or {}).items())
        sock.sendall(("GET %s HTTP/1.1\r\nHost: broker\r\n%s\r\n" % (path, extra)).encode())
        return read_response(sock)
    finally:
        if own:
            sock.close()


def read_to_close(sock):
    """Everything the peer sends on ``sock`` until it closes it (a reset ends it too)."""
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data


def closed(sock):
    """True once the peer has closed ``sock`` (what it sent first is read and dropped)."""
    timeout = sock.gettimeout()
    sock.setblocking(False)
    try:
        while True:
            if not sock.recv(65536):
                return True
    except BlockingIOError:
        return False
    except ConnectionResetError:
        return True
    finally:
        sock.settimeout(timeout)


class Canary:
    """A websocket client connected before the attack: ``round_trip`` sends a
    message and fails unless its broadcast copy is back within ``limit`` s."""

    def __init__(self, broker):
        self.client = WebSocketClient(broker.url).open()
        self.sent = 0

    def round_trip(self, limit=1.0):
        self.sent += 1
        label = "canary %d" % self.sent
        started = time.monotonic()
        self.client.send(label)
        assert self.client.receive() == [label]
        took = time.monotonic() - started
        assert took < limit, "canary round trip %.2fs" % took
        return took

    def close(self):
        self.client.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Usage:
    """The broker's CPU seconds and log bytes since this was made."""

    def __init__(self, broker):
        self.broker = broker
        self.started = time.monotonic()
        self.cpu = cpu_seconds(broker.server.pid)
        self.log = len(broker.server.output)

    def elapsed(self):
        return time.monotonic() - self.started

    def cpu_share(self):
        """CPU seconds used per second of wall time."""
        return (cpu_seconds(self.broker.server.pid) - self.cpu) / self.elapsed()

    def log_bytes(self):
        return len(self.broker.server.output) - self.log


def path_of(broker, url):
    return url[len(broker.origin):]


def retry_after(headers):
    """The seconds of the ``Retry-After`` header in ``headers`` (a response's header lines)."""
    (value,) = [line.split(":", 1)[1].strip() for line in headers.split("\r\n")
                if line.lower().startswith("retry-after:")]
    return int(value)


def opening_requests(broker):
    """A GET that would open a new session, on each transport: (name, path, headers)."""
    prefix = path_of(broker, broker.url)
    session = path_of(broker, session_url(broker.url))
    return [("raw websocket", prefix + "/websocket", UPGRADE),
            ("websocket", session + "/websocket", UPGRADE),
            ("eventsource", session + "/eventsource", {}),
            ("htmlfile", session + "/htmlfile?c=cb", {}),
            ("jsonp", session + "/jsonp?c=cb", {})]
