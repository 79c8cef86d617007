"""Whose a connection is: its peer's address, or behind a trusted proxy the address the proxy names.

Rules this module keeps: the client of a connection is its peer address, or,
behind a proxy and only when configured, the address the proxy puts in a
header of each request (:class:`ClientAddressCheck`, and
:class:`broker.transports.listener.Handover` for the requests a protocol
that took the connection over reads itself): the last one of a list, which
is the one the proxy added; earlier ones are the client's own word
(:func:`named_client`).
"""

from tornado import httputil

from broker.core.limits import client_key
from broker.transports.refusals import REFUSALS


def named_client(named, peer):
    """The client of a trusted proxy's request whose client address header says
    ``named`` (None: none): the last address of the list, the one the proxy
    added; the ``peer``'s if that is no address."""
    return (named and client_key(named.rsplit(",", 1)[-1])) or peer


class ClientAddressCheck(httputil.HTTPServerConnectionDelegate):
    """Behind a proxy: the client of each request from a trusted proxy is the
    address in its ``header`` (the peer's address when the header is missing or
    not an address), and of any other request its peer's address, whatever its
    headers say; a connection belongs to the client of its latest request, and a
    request whose client is at its limit is answered 503 and its connection
    closed. Wraps ``app``, the application's own delegate."""

    def __init__(self, app, limits, header):
        self.app = app
        self.limits = limits
        self.header = header

    def start_request(self, server_conn, request_conn):
        return CheckedRequest(self, server_conn, request_conn)

    def on_close(self, server_conn):
        self.app.on_close(server_conn)


class CheckedRequest(httputil.HTTPMessageDelegate):
    """One request through :class:`ClientAddressCheck`: refused, or passed on
    whole to the application."""

    def __init__(self, check, server_conn, request_conn):
        self.check = check
        self.server_conn = server_conn
        self.request_conn = request_conn
        self.inner = None

    def headers_received(self, start_line, headers):
        check = self.check
        stream = self.server_conn.stream
        if not stream.peer.is_proxy:  # counted by its own address as it was accepted
            self.inner = check.app.start_request(self.server_conn, self.request_conn)
            return self.inner.headers_received(start_line, headers)
        client = named_client(headers.get(check.header), stream.peer.client)
        refusal = check.limits.reassign(stream.client, client)
        if refusal is not None:
            body = REFUSALS[refusal].encode()
            self.request_conn.write_headers(
                httputil.ResponseStartLine("HTTP/1.1", 503, "Service Unavailable"),
                httputil.HTTPHeaders({"Content-Type": "text/plain; charset=utf-8",
                                      "Content-Length": str(len(body)),
                                      "Cache-Control": "no-store", "Connection": "close"}),
                body)
            self.request_conn.finish()
            return None
        stream.client = client
        self.inner = check.app.start_request(self.server_conn, self.request_conn)
        return self.inner.headers_received(start_line, headers)

    def data_received(self, chunk):
        if self.inner is not None:
            return self.inner.data_received(chunk)
        return None

    def finish(self):
        if self.inner is not None:
            self.inner.finish()

    def on_connection_close(self):
        if self.inner is not None:
            self.inner.on_connection_close()
