"""SockJS sessions over plain HTTP, and ``GET`` of a JSON document: minimal HTTP/1.1 on asyncio streams.

Rules:

- One request per connection, no redirects, no proxies, over TLS for an ``https`` URL.
- A session opens as sockjs-client opens it, and is left to the caller once the open frame
  is in: a stream stays attached until closed; a polling session is abandoned by never
  polling again.
- Every read is bounded: headers by asyncio's stream limit, a body by ``MAX_BODY_BYTES``,
  the whole exchange by a timeout.
"""

import asyncio
import json

from loadtest.client import connections, tls_context
from loadtest.framing import endpoints
from loadtest.framing.http_head import HTTPError, parse_head

MAX_BODY_BYTES = 64 * 1024


def request(method, netloc, path):
    """An HTTP/1.1 request without a body."""
    return ("%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            % (method, path, netloc)).encode("latin-1")


class Body:
    """The body of one response, piece by piece: chunked, with a length, or up to the close."""

    def __init__(self, reader, headers):
        self._reader = reader
        self._chunked = headers.get("transfer-encoding", "").lower() == "chunked"
        length = headers.get("content-length")
        self._left = int(length) if length is not None and not self._chunked else None
        self._read = 0

    async def piece(self):
        """The next bytes of the body; ``b""`` at its end."""
        try:
            if self._chunked:
                line = await self._reader.readline()
                if not line:
                    raise asyncio.IncompleteReadError(line, None)
                size = int(line.split(b";")[0].strip(), 16)
                self._count(size)
                return (await self._reader.readexactly(size + 2))[:-2] if size else b""
            if self._left is not None:
                size, self._left = self._left, 0
                self._count(size)
                return await self._reader.readexactly(size)
            data = await self._reader.read(MAX_BODY_BYTES)
        except asyncio.IncompleteReadError:
            raise HTTPError("the connection closed inside the response") from None
        except ValueError:
            raise HTTPError("a malformed chunk size") from None
        self._count(len(data))
        return data

    def _count(self, size):
        self._read += size
        if self._read > MAX_BODY_BYTES:
            raise HTTPError("a body over %d bytes" % MAX_BODY_BYTES)


async def _exchange(url, method, path, timeout):
    """Connect to ``url``'s host, send the request, read the head: ``(reader, writer, status, headers)``."""
    service = endpoints.target(url)
    reader, writer = await asyncio.wait_for(
        asyncio.open_connection(service.host, service.port, ssl=tls_context.context_for(service)), timeout)
    try:
        writer.write(request(method, service.netloc, path))
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), timeout)
        except asyncio.IncompleteReadError:
            raise HTTPError("the connection closed before an answer") from None
        except asyncio.LimitOverrunError:
            raise HTTPError("an answer with oversized headers") from None
        status, headers = parse_head(head[:-4])
    except BaseException:
        writer.close()
        raise
    return reader, writer, status, headers


async def open_session(url, transport, timeout=connections.CONNECT_TIMEOUT_S):
    """Open a SockJS session under ``url`` over ``transport``: its StreamWriter once the open frame is in."""
    path = "%s/%s" % (endpoints.session_path(url), transport)
    reader, writer, status, headers = await _exchange(url, "POST", path, timeout)
    try:
        if status != 200:
            raise HTTPError("HTTP %d on %s" % (status, transport))
        await asyncio.wait_for(_open_frame(Body(reader, headers)), timeout)
    except BaseException:
        writer.close()
        raise
    return writer


async def _open_frame(body):
    """Read frames (one a line) until the open frame; heartbeat and prelude lines of ``h`` come first."""
    pending = b""
    while True:
        *frames, pending = pending.split(b"\n")
        for frame in frames:
            if frame == b"o":
                return
            if frame.strip(b"h"):
                raise HTTPError("expected the open frame, got %r" % frame[:40])
        piece = await body.piece()
        if not piece:
            raise HTTPError("the response ended before the open frame")
        pending += piece


async def get_json(url, path, timeout=2.0):
    """``(status, document)`` of ``GET path`` on the server of ``url``; the document is None unless JSON."""
    reader, writer, status, headers = await _exchange(url, "GET", path, timeout)
    try:
        body = Body(reader, headers)
        data = b""
        while True:
            piece = await asyncio.wait_for(body.piece(), timeout)
            if not piece:
                break
            data += piece
    finally:
        writer.close()
    try:
        return status, json.loads(data)
    except ValueError:
        return status, None
