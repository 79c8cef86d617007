"""An HTTP/1.1 response's head, without I/O: the one parser of every answer the load client reads.

Rules: ``head`` is the status line and the header lines, without the blank line. Header names
are lowercased, values stripped, both latin-1 text; a repeated header keeps its last value.
Anything that is not an HTTP response raises :class:`HTTPError`, naming what came instead.
"""

from loadtest.errors import ConnectError


class HTTPError(ConnectError):
    """An answer that is not what a SockJS server gives; the text says what it was."""


def parse_head(head):
    """``(status, {lowercase name: value})`` of a response's status line and headers (bytes)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        raise HTTPError("not an HTTP response: %r" % lines[0][:80])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        if name:
            headers[name.strip().lower()] = value.strip()
    return int(parts[1]), headers
