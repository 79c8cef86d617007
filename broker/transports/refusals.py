"""What the broker answers a connection it refuses: a whole response, sent as the connection closes.

Rules this module keeps: a refusal is a complete ``Connection: close``
response, built once, as bytes; it is sent on the just-accepted socket
without waiting, what the client already sent is read and dropped (so the
close is a FIN, not a reset), and the socket is closed: a refusal holds its
descriptor for one send, never longer.
"""

from broker.core.limits import MAX_CONNECTIONS, PER_IP

DRAIN_BYTES = 65536

REFUSALS = {
    MAX_CONNECTIONS: "The server is at its connection limit; try again later.\n",
    PER_IP: "Too many connections from your address.\n",
}


def http_response(status, reason, body):
    """A complete ``Connection: close`` response as bytes."""
    body = body.encode()
    return ("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: %d\r\n"
            "Cache-Control: no-store\r\nConnection: close\r\n\r\n"
            % (status, reason, len(body))).encode() + body


REFUSAL_RESPONSES = {why: http_response(503, "Service Unavailable", body) for why, body in REFUSALS.items()}
HEADERS_TOO_LARGE = http_response(431, "Request Header Fields Too Large", "Request headers too large.\n")


def refuse(connection, response):
    """Send ``response`` on a just-accepted socket and close it, without waiting."""
    try:
        connection.setblocking(False)
        connection.send(response)
        connection.recv(DRAIN_BYTES)
    except OSError:
        pass
    finally:
        connection.close()
