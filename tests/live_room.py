"""A live room for tests that stop, kill and restart brokers under it: numbered
messages published at a steady rate, and subscribers that resume after every
lost connection, as the shipped browser client does, on any SockJS transport."""

import contextlib
import http.client
import threading
import time

import websocket

from loadtest.framing.resuming import ResumingSubscriber
from sockjs_clients import STREAMING, Closed, parse_frame

# Every way a connection of the test clients ends: a close frame or the end of
# the connection (Closed), a socket error or silence (OSError, socket.timeout),
# an HTTP answer cut short, a websocket refused, and an answer other than 200
# (the clients assert each status: haproxy answers 503 for a broker it has
# taken out or cannot reach).
LOST = (Closed, OSError, http.client.HTTPException, websocket.WebSocketException, AssertionError)


class Publisher(threading.Thread):
    """Publishes "0", "1", ... at ``rate`` a second, each with its number as its
    Idempotency-Key, with the publish ``token``, to ``targets`` (brokers, or a
    cluster's backend side: anything with ``request``) in turn, ``limit`` at the most;
    a request that fails is retried on the next target until it is answered 200.
    ``publish(message)`` does the same for one message, from the test's thread."""

    def __init__(self, targets, rate, token, limit=2000):
        super().__init__(daemon=True)
        self.targets = targets
        self.rate = rate
        self.token = token
        self.limit = limit
        self.sent = 0
        self.retries = 0
        self.stopping = threading.Event()

    def publish(self, message, deadline_s=30.0):
        deadline = time.monotonic() + deadline_s
        headers = {"Authorization": "Bearer " + self.token, "Idempotency-Key": message}
        turn = self.sent
        while True:
            target = self.targets[turn % len(self.targets)]
            try:
                if target.request("POST", "/publish", message.encode(), headers)[0] == 200:
                    return
            except OSError:
                pass
            assert time.monotonic() < deadline, "no broker took %r" % message
            self.retries += 1
            turn += 1
            time.sleep(0.05)

    def run(self):
        start = time.monotonic()
        while not self.stopping.is_set() and self.sent < self.limit:
            self.publish(str(self.sent))
            self.sent += 1
            self.stopping.wait(max(0.0, start + self.sent / self.rate - time.monotonic()))

    def stop(self):
        """Publish no more; returns how many were published, every one answered 200."""
        self.stopping.set()
        self.join(35)
        assert not self.is_alive(), "the publisher is stuck"
        return self.sent


class Subscriber(threading.Thread):
    """One subscriber of the room at ``url`` over ``client_class`` (a client of
    tests/sockjs_clients.py), asking for positions. Each time its connection
    ends it opens a new session (a new server id, so haproxy may place it
    anywhere) that resumes after what it delivered, after a pause of ``pause``
    seconds, doubled after each connection that never started, to a second;
    ``max_connections`` times at the most. The resuming rules are the load
    client's (``resuming``: its gaps and duplicates).

    ``delivered``: the messages, in order, each once; ``losses``: each end of a
    connection as ``(monotonic time, close code or None, what ended it)``;
    ``live``: its current connection has started (open, resumed or gap told)."""

    def __init__(self, client_class, url, timeout=10.0, pause=0.1, max_connections=60):
        super().__init__(daemon=True, name="subscriber-%s" % client_class.transport)
        self.client_class = client_class
        self.url = url
        self.timeout = timeout
        self.pause = pause
        self.max_connections = max_connections
        self.resuming = ResumingSubscriber()
        self.delivered = []
        self.losses = []
        self.connections = 0
        self.live = False
        self.error = None
        self.stopping = threading.Event()

    @property
    def transport(self):
        return self.client_class.transport

    def run(self):
        failures = 0
        try:
            while not self.stopping.is_set():
                assert self.connections < self.max_connections, "%s: %d connections" % (self.transport,
                                                                                       self.connections)
                self.connections += 1
                try:
                    self._connection()
                except LOST as lost:
                    failures = 0 if self.live else failures + 1
                    self.live = False
                    if self.stopping.is_set():
                        return
                    self.losses.append((time.monotonic(), getattr(lost, "code", None), repr(lost)[:200]))
                    self.stopping.wait(min(1.0, self.pause * 2 ** failures))
        except BaseException as error:  # reported by stop()
            self.error = error

    def _connection(self):
        """Read one connection to its end; raises one of LOST, or returns when stopping."""
        client = None
        try:
            client = self.client_class(self.url, timeout=self.timeout, query=self.resuming.query())
            if issubclass(self.client_class, tuple(STREAMING)):
                client.request()
            opened = False
            while not self.stopping.is_set():
                frame = client.read_frame()
                if frame == "o":
                    if opened:
                        # A poll that reached a broker which did not hold its session
                        # opened a new one there: sockjs-client takes this as a lost
                        # session (1006), and so does this client.
                        raise Closed(None, "Server lost session")
                    opened = True
                for envelope in parse_frame(frame):
                    delivered = self.resuming.receive(envelope)
                    if "c" in envelope:
                        self.live = True
                    elif delivered is not None:
                        self.delivered.append(delivered[1])
        finally:
            if client is not None:
                with contextlib.suppress(*LOST, AttributeError):
                    client.close()

    def stop(self):
        """End its connection and wait for it; fails with what stopped it, if anything did."""
        self.stopping.set()
        self.join(self.timeout + 5)
        assert not self.is_alive(), "%s: still reading" % self.transport
        if self.error is not None:
            raise self.error
