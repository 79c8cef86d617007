"""The head of a request the broker may answer itself, read from a connection's bytes, without I/O.

The broker answers some requests of the HTTP transports without Tornado: a
poll on a kept-alive connection (:mod:`broker.protocol.polls`), a send
(:mod:`broker.protocol.sends`). It reads them from bytes peeked at on the
socket, and answers only what it is sure to read as Tornado would; anything
else goes to Tornado as it was sent.

Rules this module keeps:

* :func:`read_head` reads a head only when it is sure: the whole head is in
  the bytes given, within ``MAX_HEAD_BYTES``; the request line has three parts
  and HTTP/1.1; every line ends in CRLF, no header is folded or holds a
  control character but a tab; ``Host`` is given once; ``Origin``,
  ``Content-Length`` (digits only) and a trusted proxy's client address
  header at most once each; and no header asks for what an answer would have
  to honour: ``Transfer-Encoding``, ``Expect``, ``Connection: close``,
  ``Upgrade``, or a CORS preflight's ``Access-Control-Request-Headers``.
  Anything else is None.
* :func:`session_path` reads a request target of the router's transport
  routes, ``<prefix>/<server>/<session>/<transport>``, as the router matches
  them, with no ``%``-escape anywhere.
"""

import re
from typing import NamedTuple, Optional

END_OF_HEAD = b"\r\n\r\n"
# A head this long or longer is not one the broker answers: Tornado reads it.
MAX_HEAD_BYTES = 8192
# Bytes no header of such a request holds: an answer would echo its Origin.
_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_DIGITS = re.compile(rb"[0-9]{1,9}\Z")
_REFUSED_HEADERS = frozenset((b"transfer-encoding", b"expect", b"upgrade", b"access-control-request-headers"))


class RequestHead(NamedTuple):
    """A request's head, read from the bytes a connection has received."""

    method: bytes
    target: bytes
    size: int
    """How many bytes of the connection it takes."""
    content_length: int
    """Its ``Content-Length``; 0 without one."""
    content_type: Optional[str]
    origin: Optional[str]
    """Its ``Origin`` header, if any."""
    host: str
    """Its ``Host`` header."""
    named_client: Optional[str]
    """The value of the client address header asked for, if any."""


def read_head(data, client_header=None):
    """The :class:`RequestHead` that ``data`` (bytes) begins with; None if it is not sure
    (see the rules). ``client_header``: the header (lower-case bytes) whose value
    is the head's ``named_client``, if any."""
    end = data.find(END_OF_HEAD, 0, MAX_HEAD_BYTES)
    if end < 0:
        return None
    head = data[:end]
    if _CONTROL.search(head) is not None:
        return None
    lines = head.split(b"\r\n")
    request_line = lines[0].split(b" ")
    if len(request_line) != 3 or request_line[2] != b"HTTP/1.1":
        return None
    length = content_type = origin = host = named_client = None
    for line in lines[1:]:
        name, colon, value = line.partition(b":")
        if not colon or not name or name[-1:] in b" \t" or line[:1] in b" \t" or b"\n" in line or b"\r" in line:
            return None
        name = name.lower()
        value = value.strip(b" \t")
        if name in _REFUSED_HEADERS:
            return None
        if name == b"content-length":
            if length is not None or _DIGITS.match(value) is None:
                return None
            length = int(value)
        elif name == b"content-type":
            content_type = value.decode("latin-1")
        elif name == b"connection":
            if b"close" in value.lower():
                return None
        elif name == b"origin":
            if origin is not None:
                return None
            origin = value.decode("latin-1")
        elif name == b"host":
            if host is not None:
                return None
            host = value.decode("latin-1")
        elif name == client_header:
            if named_client is not None:
                return None
            named_client = value.decode("latin-1")
    if host is None:
        return None
    return RequestHead(request_line[0], request_line[1], end + len(END_OF_HEAD), length or 0, content_type, origin,
                       host, named_client)


def session_path(target, prefix, transport):
    """``(session id, query)`` of a request target (bytes) of ``transport``'s
    route under ``prefix``, or None."""
    if b"%" in target:
        return None
    path, _, query = target.decode("latin-1").partition("?")
    parts = path.split("/")
    # prefix, server, session, transport: the router's r"<prefix>/[^/.]+/(?P<session_id>[^/.]+)/<transport>$"
    if len(parts) < 4 or parts[-1] != transport or "/".join(parts[:-3]) != prefix:
        return None
    server, session_id = parts[-3], parts[-2]
    if not server or not session_id or "." in server or "." in session_id:
        return None
    return session_id, query
