"""One ``python -m broker.conformance`` for the whole directory, and raw HTTP
helpers that show exactly what went over the wire."""

import http.client
import socket
import sys
import uuid

import pytest

from loadtest.contenders.child_process import launch

TIMEOUT = 5.0


class Response:
    def __init__(self, status, headers, body):
        self.status = status
        self.headers = headers
        self.body = body

    def header(self, name):
        return self.headers.get(name)


class RawStream:
    """A request written by hand on a plain socket, read back byte by byte."""

    def __init__(self, host, port, request):
        self.sock = socket.create_connection((host, port), timeout=TIMEOUT)
        self.sock.sendall(request.encode())
        self.buffer = b""

    def read_until(self, marker):
        while marker not in self.buffer:
            data = self.sock.recv(65536)
            assert data, "connection closed before %r; got %r" % (marker, self.buffer[-200:])
            self.buffer += data
        head, _, self.buffer = self.buffer.partition(marker)
        return head + marker

    def read_head(self):
        """The status line and headers, as (status, {lowercase name: value})."""
        lines = self.read_until(b"\r\n\r\n").decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        return int(lines[0].split()[1]), headers

    def read_to_eof(self):
        """Everything until the server closes the connection (fails on timeout)."""
        data = self.buffer
        while True:
            chunk = self.sock.recv(65536)
            if not chunk:
                return data
            data += chunk

    def close(self):
        self.sock.close()


class Service:
    """A running SockJS service; paths are relative to the server root
    (``/echo/...``), ``prefix`` is the service's own (``/echo``)."""

    def __init__(self, server):
        self.server = server
        self.origin, _, prefix = server.url.rpartition("/")
        self.prefix = "/" + prefix
        self.host, port = self.origin.split("//")[1].rsplit(":", 1)
        self.port = int(port)

    def request(self, method, path, body=None, headers=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            response = conn.getresponse()
            return Response(response.status, response.headers, response.read().decode())
        finally:
            conn.close()

    def raw(self, request):
        return RawStream(self.host, self.port, request)

    def ws_url(self, path):
        return "ws://%s:%d%s" % (self.host, self.port, path)

    def session(self, prefix=None):
        """The URL path of a new session under ``prefix`` (default: this service)."""
        return "%s/000/%s" % (prefix or self.prefix, uuid.uuid4())


def _serve(module, *flags):
    server = launch([sys.executable, "-m", module, "--host", "127.0.0.1", "--port", "0", *flags])
    try:
        yield Service(server)
    finally:
        server.stop()


@pytest.fixture(scope="session")
def conformance():
    """``python -m broker.conformance``: ``/echo``, ``/close`` and the rest."""
    yield from _serve("broker.conformance")


@pytest.fixture(scope="session")
def production():
    """``python -m broker``: its ``/broadcast`` service runs the same transports."""
    yield from _serve("broker", "--log-level", "warning")


@pytest.fixture(params=["conformance", "production"])
def service(request):
    """Each check that needs no ``/close`` runs on both servers."""
    return request.getfixturevalue(request.param)
