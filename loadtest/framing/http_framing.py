"""What each SockJS HTTP transport's requests and responses look like, without I/O (protocol 0.3.3).

Rules:

- :data:`HTTP` gives each HTTP transport its :class:`HttpTransport`: the request that receives
  (opens the session, reopens a stream or polls), and the one that sends, as sockjs-client
  makes them (HTTP/1.1, keep-alive). Sends go to ``xhr_send`` as ``text/plain``, answered 204;
  jsonp-polling's to ``jsonp_send``, the form ``d=<the array>``, answered 200.
- A body holds one frame a line, wrapped its transport's way (:data:`HTTP`); other lines are
  no frames. A :class:`LineFrames` gives them as ``(buffer, start, end)``: offsets into the
  bytes read for xhr and eventsource, never copied; htmlfile's and jsonp's JavaScript string
  literals decoded into a buffer of their own.
- A line over ``MAX_LINE_BYTES``, or a literal that does not decode, raises
  :class:`loadtest.framing.http_head.HTTPError`.
"""

import functools
import json
import urllib.parse
from typing import NamedTuple

from loadtest.framing import payload
from loadtest.framing.endpoints import with_query
from loadtest.framing.http_head import HTTPError

MAX_LINE_BYTES = 16 * 1024 * 1024
CALLBACK = "_sockjs_load"
_CARRIAGE_RETURN = 0x0D


class LineFrames:
    """The frames of one xhr or xhr-streaming body: one a line, the line itself."""

    __slots__ = ("_rest",)

    def __init__(self):
        self._rest = b""

    def frames(self, data):
        """The frames of the body piece ``data`` (and what was left of the last line), as ``(buffer, start, end)``."""
        if self._rest:
            data = self._rest + data
        found = []
        pos = 0
        line_end = data.find(b"\n")
        while line_end >= 0:
            self._line(data, pos, line_end, found)
            pos = line_end + 1
            line_end = data.find(b"\n", pos)
        self._rest = data[pos:] if pos < len(data) else b""
        if len(self._rest) > MAX_LINE_BYTES:
            raise HTTPError("a line over %d bytes" % MAX_LINE_BYTES)
        return found

    def finish(self):
        """The frame of a last line the body left unended, if any."""
        return self.frames(b"\n") if self._rest else []

    def _line(self, data, start, end, found):
        if end > start:
            found.append((data, start, end))


class EventSourceFrames(LineFrames):
    """eventsource: ``data: <frame>`` lines (ending ``\\r\\n``), between blank lines."""

    __slots__ = ()

    def _line(self, data, start, end, found):
        if data.startswith(b"data: ", start):
            found.append((data, start + 6, end - 1 if data[end - 1] == _CARRIAGE_RETURN else end))


class ScriptFrames(LineFrames):
    """htmlfile and jsonp: a line ``<prefix>"<frame>");``, the frame a JavaScript string literal."""

    __slots__ = ("_prefix",)

    def __init__(self, prefix):
        super().__init__()
        self._prefix = prefix

    def _line(self, data, start, end, found):
        if data.startswith(b"/**/", start):  # jsonp's guard against content sniffing
            start += 4
        if not data.startswith(self._prefix, start):
            return
        close = data.rfind(b")", start, end)
        try:
            frame = json.loads(data[start + len(self._prefix) : close]).encode()
        except (ValueError, AttributeError):
            raise HTTPError("a script line that is no call with a string: %r" % data[start:end][:80]) from None
        found.append((frame, 0, len(frame)))


class HttpTransport(NamedTuple):
    """One SockJS HTTP transport: its receiving request, whether it ``streams``, its ``frames``, where sends go."""

    name: str
    method: str
    suffix: str
    streams: bool
    frames: object
    send_suffix: str
    send_status: int

    def receive_request(self, host, session, query=""):
        """The request that opens, reopens or polls the session at path ``session`` on ``host``."""
        body = "Content-Length: 0\r\n" if self.method == "POST" else ""
        return ("%s %s HTTP/1.1\r\nHost: %s\r\n%s\r\n" % (
            self.method, with_query(session + "/" + self.suffix, query), host, body)).encode("latin-1")

    def send_request(self, host, session, messages, query=""):
        """The request that publishes ``messages`` (bytes, needing no JSON escapes) on the session."""
        array = payload.sockjs_send_payload(*messages)
        if self.send_suffix == "jsonp_send":
            body = b"d=" + urllib.parse.quote_from_bytes(array, safe="").encode("ascii")
            content_type = "application/x-www-form-urlencoded"
        else:
            body, content_type = array, "text/plain;charset=UTF-8"
        return ("POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n" % (
            with_query(session + "/" + self.send_suffix, query), host, content_type, len(body))).encode("latin-1") + body


# xhr: the line itself; eventsource: data: <frame>; htmlfile: p("<frame>"); jsonp: [/**/]<callback>("<frame>");
HTTP = {transport.name: transport for transport in (
    HttpTransport("xhr-streaming", "POST", "xhr_streaming", True, LineFrames, "xhr_send", 204),
    HttpTransport("eventsource", "GET", "eventsource", True, EventSourceFrames, "xhr_send", 204),
    HttpTransport("htmlfile", "GET", "htmlfile?c=" + CALLBACK, True, functools.partial(ScriptFrames, b"p("),
                  "xhr_send", 204),
    HttpTransport("xhr-polling", "POST", "xhr", False, LineFrames, "xhr_send", 204),
    HttpTransport("jsonp-polling", "GET", "jsonp?c=" + CALLBACK, False,
                  functools.partial(ScriptFrames, CALLBACK.encode() + b"("), "jsonp_send", 200),
)}
