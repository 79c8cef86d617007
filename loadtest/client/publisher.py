"""A backend publishing to the broker over HTTP: ``POST /publish`` on keep-alive connections.

Rules:

- A :class:`Publisher` holds ``connections`` keep-alive sockets to one broker, at most one
  request in flight on each: what it sends at once arrives in one event-loop iteration, as
  a backend's publishes would. Over TLS each socket is wrapped as it connects.
- Every answer is read to its end, so a connection stays usable; anything but ``200``, a
  broken connection or no answer within ``timeout`` raises :class:`PublishFailed`.
- A connection the broker closed while it was idle (its keep-alive bound, ``--header-timeout``)
  is opened anew before a request goes on it: an idle connection is readable only once closed,
  and nothing was sent on it, so nothing is published twice.
- Blocking sockets: a publish holds its caller until the broker has answered.
"""

import select
import socket

from loadtest.errors import LoadTestError
from loadtest.framing.http_head import parse_head


class PublishFailed(LoadTestError):
    """``POST /publish`` was answered with something other than 200, or not answered in time."""


class Publisher:
    """``POST /publish`` to the broker at ``host:port`` over ``connections`` keep-alive sockets."""

    def __init__(self, host, port, token=None, connections=1, timeout=10.0, ssl_context=None):
        self._headers = b"Host: %s:%d\r\nContent-Type: text/plain\r\n" % (host.encode(), port)
        if token:
            self._headers += b"Authorization: Bearer %s\r\n" % token.encode()
        self.timeout = timeout
        self._address = (host, port, timeout, ssl_context)
        self.sockets = [connect(*self._address) for _ in range(connections)]

    def publish(self, messages, query=b"", headers=b""):
        """Publish ``messages`` (bytes, at most one per connection) to ``/publish`` + ``query``
        (``b"?key=total&op=add"``) with ``headers`` lines, all sent before any answer is read."""
        return self.publish_each([(query, message) for message in messages], headers)

    def publish_each(self, requests, headers=b""):
        """Publish each ``(query, message)`` of ``requests`` (at most one per connection) to ``/publish`` +
        its query (``b"?room=a"``) with ``headers`` lines, all sent before any answer is read."""
        try:
            sockets = [self._open(index) for index in range(min(len(requests), len(self.sockets)))]
            for sock, (query, message) in zip(sockets, requests):
                sock.sendall(b"POST /publish%s HTTP/1.1\r\n%s%sContent-Length: %d\r\n\r\n%s" % (
                    query, self._headers, headers, len(message), message))
            answers = [read_response(sock) for sock in sockets]
        except socket.timeout:
            raise PublishFailed("POST /publish: no answer within %g s" % self.timeout) from None
        except OSError as error:
            raise PublishFailed("POST /publish: %s" % (error.strerror or error)) from None
        for status, body in answers:
            if status != 200:
                raise PublishFailed("POST /publish answered %d: %s" % (status, body.decode("utf-8", "replace")))
        return len(sockets)

    def _open(self, index):
        """The ``index``-th socket, connected anew if the broker closed it while it was idle."""
        sock = self.sockets[index]
        if select.select([sock], [], [], 0)[0]:
            sock.close()
            sock = self.sockets[index] = connect(*self._address)
        return sock

    def close(self):
        for sock in self.sockets:
            sock.close()


def connect(host, port, timeout, ssl_context=None):
    """A blocking socket to ``host:port`` with ``timeout``, over TLS with ``ssl_context`` if given."""
    sock = socket.create_connection((host, port), timeout=timeout)
    if ssl_context is None:
        return sock
    try:
        return ssl_context.wrap_socket(sock, server_hostname=host)
    except BaseException:
        sock.close()
        raise


def read_head(sock):
    """(status line and headers, what followed them) of the response due on ``sock``."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the broker closed the connection before its answer")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


def read_response(sock):
    """``(status, body)`` of the one response due on ``sock``."""
    head, body = read_head(sock)
    status, headers = parse_head(head)
    length = int(headers.get("content-length", 0))
    while len(body) < length:
        chunk = sock.recv(4096)
        if not chunk:
            raise ConnectionError("the broker closed a publishing connection")
        body += chunk
    return status, body
