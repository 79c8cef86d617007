"""HTTP/1.1 responses of one connection, parsed incrementally without I/O: bytes in, events out.

Rules:

- :class:`ResponseParser` reads the responses of one connection, in the order of its
  requests: it is fed every read and told of the close.
- Events, per response: one :class:`Head`, the body as ``bytes`` pieces (de-chunked; slices
  of what was read, never joined), then one :class:`Ended`: :data:`REUSABLE` if the
  connection may carry the next request, :data:`LAST` if not. Interim 1xx answers are skipped.
- A body is delimited as RFC 9112 (6.3) says for an answer to a GET or POST: none after 204
  or 304; chunked (trailers skipped); else ``Content-Length`` bytes; else up to the close.
- A connection is not reusable after ``Connection: close``, an HTTP/1.0 answer without
  ``Connection: keep-alive``, or a body that ended at the close.
- What breaks these rules raises :class:`loadtest.framing.http_head.HTTPError` naming it
  (a head over ``MAX_HEAD_BYTES``, a bad length or chunk, a close inside a response).
"""

from typing import Dict, NamedTuple

from loadtest.framing.http_head import HTTPError, parse_head

MAX_HEAD_BYTES = 64 * 1024
MAX_CHUNK_LINE_BYTES = 1024


class Head(NamedTuple):
    """A response's status and headers (names lowercased)."""

    status: int
    headers: Dict[str, str]


class Ended(NamedTuple):
    """A response is complete; the connection may carry another request if ``reusable``."""

    reusable: bool


REUSABLE = Ended(True)
LAST = Ended(False)

_HEAD, _LENGTH, _CHUNK_SIZE, _CHUNK_DATA, _CHUNK_END, _TRAILER, _UNTIL_CLOSE = range(7)


def _whole_chunks(data):
    """``(pieces, end)``: the data of the whole chunks ``data`` starts with, and where they end: a stream's
    common read takes this shortcut; anything else (a chunk cut, the last, a bad size) is left to the loop."""
    pieces = []
    pos = 0
    size = len(data)
    while pos < size:
        line_end = data.find(b"\r\n", pos, pos + 18)
        if line_end <= pos or not data[pos:line_end].isalnum():
            break
        try:
            length = int(data[pos:line_end], 16)
        except ValueError:
            break
        start = line_end + 2
        end = start + length
        if not length or end + 2 > size or data[end] != 13 or data[end + 1] != 10:
            break
        pieces.append(data[start:end])
        pos = end + 2
    return pieces, pos


class ResponseParser:
    """The responses of one connection (see the module's rules)."""

    __slots__ = ("_state", "_buffer", "_left", "_reusable")

    def __init__(self):
        self._state = _HEAD
        self._buffer = b""
        self._left = 0
        self._reusable = True

    @property
    def idle(self):
        """Between responses, nothing of the next one read."""
        return self._state == _HEAD and not self._buffer

    def feed(self, data):
        """The events of the bytes ``data``, in order (a list)."""
        if self._state == _CHUNK_SIZE and not self._buffer:
            events, pos = _whole_chunks(data)
            if pos == len(data):
                return events
            data = data[pos:]
        else:
            events = []
        if self._buffer:
            data = self._buffer + data
            self._buffer = b""
        size = len(data)
        pos = 0
        while pos < size:
            state = self._state
            if state == _CHUNK_DATA or state == _LENGTH:
                end = pos + self._left
                if end > size:
                    events.append(data[pos:] if pos else data)
                    self._left = end - size
                    return events
                events.append(data[pos:end])
                pos = end
                if state == _CHUNK_DATA:
                    self._state = _CHUNK_END
                else:
                    self._end(events)
            elif state == _CHUNK_SIZE or state == _CHUNK_END or state == _TRAILER:
                line_end = data.find(b"\r\n", pos)
                if line_end < 0:
                    if size - pos > MAX_CHUNK_LINE_BYTES:
                        raise HTTPError("a chunk line over %d bytes" % MAX_CHUNK_LINE_BYTES)
                    break
                if state == _CHUNK_SIZE:
                    self._chunk_size(data[pos:line_end])
                elif state == _CHUNK_END:
                    if line_end != pos:
                        raise HTTPError("a chunk longer than its size")
                    self._state = _CHUNK_SIZE
                elif line_end == pos:  # the blank line after the trailers
                    self._end(events)
                pos = line_end + 2
            elif state == _UNTIL_CLOSE:
                events.append(data[pos:] if pos else data)
                return events
            else:
                body_start = self._head(data, pos, events)
                if body_start < 0:
                    break
                pos = body_start
        if pos < size:
            self._buffer = data[pos:]
        return events

    def feed_eof(self):
        """The events of the connection's close: :data:`LAST` if it ends a body (HTTPError if it cuts one)."""
        if self._state == _UNTIL_CLOSE:
            self._state = _HEAD
            return [LAST]
        if not self.idle:
            raise HTTPError("the connection closed inside the response")
        return []

    def _head(self, data, pos, events):
        """Read a head at ``pos``: where its body starts, or -1 (kept for the next read) if incomplete."""
        if data.startswith(b"\r\n", pos):  # stray line ends between responses (RFC 9112 2.2)
            return pos + 2
        head_end = data.find(b"\r\n\r\n", pos)
        if head_end < 0:
            if len(data) - pos > MAX_HEAD_BYTES:
                raise HTTPError("a response head over %d bytes" % MAX_HEAD_BYTES)
            return -1
        status, headers = parse_head(data[pos:head_end])
        if 100 <= status < 200:
            return head_end + 4
        events.append(Head(status, headers))
        tokens = [token.strip().lower() for token in headers.get("connection", "").split(",")]
        if data.startswith(b"HTTP/1.0", pos):
            self._reusable = "keep-alive" in tokens
        else:
            self._reusable = "close" not in tokens
        if status in (204, 304):
            self._end(events)
        elif headers.get("transfer-encoding", "").lower().endswith("chunked"):
            self._state = _CHUNK_SIZE
        elif "content-length" in headers:
            length = headers["content-length"]
            if not length.isdigit():
                raise HTTPError("a malformed Content-Length: %r" % length[:40])
            self._left = int(length)
            if self._left:
                self._state = _LENGTH
            else:
                self._end(events)
        else:
            self._reusable = False
            self._state = _UNTIL_CLOSE
        return head_end + 4

    def _chunk_size(self, line):
        size = line.split(b";", 1)[0].strip()
        try:
            self._left = int(size, 16)
        except ValueError:
            raise HTTPError("a malformed chunk size: %r" % line[:40]) from None
        if self._left < 0 or size.startswith((b"+", b"0x", b"0X")):
            raise HTTPError("a malformed chunk size: %r" % line[:40])
        self._state = _CHUNK_DATA if self._left else _TRAILER

    def _end(self, events):
        events.append(REUSABLE if self._reusable else LAST)
        self._state = _HEAD
