"""Opening SockJS sessions on a loopback port, to warm a PyPy broker before it takes clients.

PyPy compiles a path once it has run about a thousand times. Until then a new session costs
it several times what it costs later (BENCHMARKS.rst, "Rolling restart"), and
a freshly (re)started broker meets its first clients, a deploy's thousands of reconnects, in
exactly that regime. With ``--warm-up N`` the broker first serves N sessions of a room of its
own (:func:`broker.app.warm_up_sessions`), which this module opens.

Rules this module keeps:

* It speaks to 127.0.0.1 only, to the port it is given, one session at a time: the
  client of each transport's opening request reads the response until the session's open
  frame, then closes its connection.
* Every transport a browser may use takes its turn, the ``/info`` request every client
  sends first included, so that each one's opening is compiled, not only the websocket's.
* Bounded in time: the warm-up ends at ``deadline`` (the loop's clock) whatever it has
  done, and at the first session that fails, which is logged; the broker then starts
  anyway, colder.
"""

import asyncio
import base64
import logging
import os

LOG = logging.getLogger("broker.ops.warm_up")

HOST = "127.0.0.1"

# Each transport's opening request (its path after the session's, its method) and what the
# response holds once the session's open frame has come.
OPENINGS = (
    ("websocket", "GET", b"\x81\x01o"),
    ("xhr_streaming", "POST", b"\r\no\n"),
    ("xhr", "POST", b"\r\no\n"),
    ("eventsource", "GET", b"data: o\r\n"),
    ("htmlfile?c=p", "GET", b'p("o");'),
    ("jsonp?c=p", "GET", b'p("o");'),
)


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


def info_request(prefix):
    return ("GET %s/info HTTP/1.1\r\nHost: %s\r\n\r\n" % (prefix, HOST)).encode()


async def exchange(port, request, until):
    """Send ``request`` on a new connection to ``port`` and read until ``until`` has come."""
    reader, writer = await asyncio.open_connection(HOST, port)
    try:
        writer.write(request)
        received = b""
        while until not in received:
            chunk = await reader.read(65536)
            if not chunk:
                raise ConnectionError("closed after %r" % received[:200])
            received += chunk
    finally:
        writer.close()


async def open_sessions(port, prefix, count, deadline, step_timeout=5.0):
    """Open ``count`` sessions on the broker at ``port`` (its SockJS service at ``prefix``),
    each transport in turn, until ``deadline``. How many were opened."""
    loop = asyncio.get_running_loop()
    info = info_request(prefix)
    for opened in range(count):
        if loop.time() >= deadline:
            LOG.warning("warm-up: %d sessions of %d opened in the time allowed", opened, count)
            return opened
        transport, method, until = OPENINGS[opened % len(OPENINGS)]
        request = opening_request(prefix, "w%d" % opened, transport, method)
        try:
            await asyncio.wait_for(exchange(port, info, b"}"), step_timeout)
            await asyncio.wait_for(exchange(port, request, until), step_timeout)
        except (OSError, asyncio.TimeoutError) as error:
            LOG.warning("warm-up stopped at session %d (%s): %s", opened, transport, error or type(error).__name__)
            return opened
    return count
