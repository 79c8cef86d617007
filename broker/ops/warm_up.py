"""Opening SockJS sessions on a loopback port, to warm a PyPy broker before it takes clients.

PyPy compiles a path once it has run about a thousand times. Until then a new session costs
it several times what it costs later (BENCHMARKS.rst, "Rolling restart"), and so does a
client's message: a request of its own on every HTTP transport, then a broadcast, each run
once a message, not once a delivery, and so compiled only after thousands of messages. A
freshly (re)started broker meets its first clients, a deploy's thousands of reconnects, in
exactly that regime. With ``--warm-up-sessions N`` the broker first serves N sessions of a room
of its own (:func:`broker.app.warm_up_sessions`), which this module opens, each sending a message.

Rules this module keeps:

* It speaks to 127.0.0.1 only, to the port it is given, one session at a time. Each
  session's opening request is read until its open frame; then, if the broker's clients may
  publish and it takes messages of the warm-up's size (:func:`may_send`), the session sends
  one message as its transport's browser client does (a websocket frame; ``xhr_send``, or
  ``jsonp_send`` for jsonp-polling, on a new connection) and reads until that message comes
  back to it (a polling session asks again on its kept connection); then its connections
  are closed.
* Every transport a browser may use takes its turn, the ``/info`` request every client
  sends first included, so that each one's opening, send and broadcast are compiled, not
  only the websocket's.
* Bounded in time: the warm-up ends at ``deadline`` (the loop's clock) whatever it has
  done, and at the first session that fails, which is logged; the broker then starts
  anyway, colder.
"""

import asyncio
import base64
import logging
import os

from broker.protocol.sends import FORM, JSONP_SEND, XHR_SEND

LOG = logging.getLogger("broker.ops.warm_up")

HOST = "127.0.0.1"

# Each transport's opening request (its path after the session's, its method), what the
# response holds once the session's open frame has come, and the path its client sends to.
OPENINGS = (
    ("websocket", "GET", b"\x81\x01o", None),
    ("xhr_streaming", "POST", b"\r\no\n", XHR_SEND),
    ("xhr", "POST", b"\r\no\n", XHR_SEND),
    ("eventsource", "GET", b"data: o\r\n", XHR_SEND),
    ("htmlfile?c=p", "GET", b'p("o");', XHR_SEND),
    ("jsonp?c=p", "GET", b'p("o");', JSONP_SEND),
)
# The transports whose response ends with each frame: their client asks again for the next.
POLLING = frozenset(("xhr", "jsonp?c=p"))
# The one message each session sends: as a websocket client's frame (masked with a key of
# zeros, which leaves the payload as it is: masking protects nothing on loopback), as an
# xhr_send body, as a jsonp_send form. Every transport frames it back inside ``a[``.
WEBSOCKET_MESSAGE = b"\x81\x85\x00\x00\x00\x00" + b'["w"]'
SEND_BODIES = {XHR_SEND: b'["w"]', JSONP_SEND: b"d=%5B%22w%22%5D"}
SEND_ANSWERS = {XHR_SEND: b" 204 ", JSONP_SEND: b"\r\n\r\nok"}
ECHO = b"a["
# The longest send the warm-up makes, against the broker's --max-message-size.
LARGEST_SEND = max(len(body) for body in SEND_BODIES.values())


def may_send(client_publish, max_message_size):
    """Whether warm-up sessions send their message: only where clients may publish, and where
    no send of theirs would be over the broker's message size, closing its session."""
    return client_publish and max_message_size >= LARGEST_SEND


def opening_request(prefix, session, transport, method):
    """The bytes of the request opening ``session`` on ``transport``."""
    path = "%s/0/%s/%s" % (prefix, session, transport)
    headers = ["%s %s HTTP/1.1" % (method, path), "Host: %s" % HOST]
    if transport == "websocket":
        key = base64.b64encode(os.urandom(16)).decode()
        headers += ["Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Key: " + key,
                    "Sec-WebSocket-Version: 13"]
    if method == "POST":
        headers.append("Content-Length: 0")
    return ("\r\n".join(headers) + "\r\n\r\n").encode()


def send_request(prefix, session, path):
    """The bytes of a request sending the warm-up's message to ``session`` at ``path``."""
    body = SEND_BODIES[path]
    kind = "text/plain" if path == XHR_SEND else FORM
    return ("POST %s/0/%s/%s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (prefix, session, path, HOST, kind, len(body))).encode() + body


def info_request(prefix):
    return ("GET %s/info HTTP/1.1\r\nHost: %s\r\n\r\n" % (prefix, HOST)).encode()


async def read_until(reader, until):
    """Read from ``reader`` until ``until`` has come."""
    received = b""
    while until not in received:
        chunk = await reader.read(65536)
        if not chunk:
            raise ConnectionError("closed after %r" % received[:200])
        received += chunk


async def exchange(port, request, until):
    """Send ``request`` on a new connection to ``port`` and read until ``until`` has come."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(request)
        await read_until(reader, until)
    finally:
        writer.close()


async def warm_session(port, prefix, number, publish):
    """Open session ``number`` on its transport and, if clients may ``publish``, send one
    message on it and read until it comes back."""
    transport, method, opened, send_path = OPENINGS[number % len(OPENINGS)]
    session = "w%d" % number
    opening = opening_request(prefix, session, transport, method)
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(opening)
        await read_until(reader, opened)
        if not publish:
            return
        if send_path is None:
            writer.write(WEBSOCKET_MESSAGE)
        else:
            await exchange(port, send_request(prefix, session, send_path), SEND_ANSWERS[send_path])
            if transport in POLLING:
                writer.write(opening)
        await read_until(reader, ECHO)
    finally:
        writer.close()


async def open_sessions(port, prefix, count, deadline, publish=True, step_timeout=5.0):
    """Open ``count`` sessions on the broker at ``port`` (its SockJS service at ``prefix``),
    each transport in turn, until ``deadline``, each sending a message if clients may
    ``publish``. How many were opened."""
    loop = asyncio.get_running_loop()
    info = info_request(prefix)
    for opened in range(count):
        if loop.time() >= deadline:
            LOG.warning("warm-up: %d sessions of %d opened in the time allowed", opened, count)
            return opened
        try:
            await asyncio.wait_for(exchange(port, info, b"}"), step_timeout)
            await asyncio.wait_for(warm_session(port, prefix, opened, publish), step_timeout)
        except (OSError, asyncio.TimeoutError) as error:
            transport = OPENINGS[opened % len(OPENINGS)][0]
            LOG.warning("warm-up stopped at session %d (%s): %s", opened, transport, error or type(error).__name__)
            return opened
    return count
