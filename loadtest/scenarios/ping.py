"""``python -m loadtest ping --url URL``: one connection, one message, its round trip."""

import random
import string
import sys
import time
import urllib.parse

import websocket as websocket_client

from loadtest import arguments
from loadtest.client import connections, endpoints


def websocket_url(url, transport):
    parts = urllib.parse.urlsplit(url)
    return "ws://%s%s" % (parts.netloc, endpoints.endpoint_path(url, transport))


def ping(url, transport="sockjs", timeout=5.0):
    """Round trip in seconds of one message through the server at ``url``."""
    token = "ping-" + "".join(random.choice(string.ascii_lowercase) for _ in range(10))
    conn = websocket_client.create_connection(websocket_url(url, transport), timeout=timeout)
    try:
        if transport == "sockjs":
            opening = conn.recv()
            if opening != "o":
                raise websocket_client.WebSocketException("expected the SockJS open frame, got %r" % opening)
        started = time.monotonic()
        conn.send('["%s"]' % token if transport == "sockjs" else token)
        deadline = started + timeout
        while time.monotonic() < deadline:
            conn.settimeout(max(0.01, deadline - time.monotonic()))
            if token in conn.recv():
                return time.monotonic() - started
        raise websocket_client.WebSocketTimeoutException("no echo within %g s" % timeout)
    finally:
        conn.close()


SUMMARY = "one connection, one message, its round trip"
DESCRIPTION = "One connection, one message, its round trip."


def add_arguments(parser):
    arguments.option(parser, "--url", type=arguments.loopback_url, default=arguments.DEFAULT_URL,
                     help="SockJS prefix (loopback only)")
    arguments.option(parser, "--transport", choices=("sockjs", "raw"), default="sockjs")
    arguments.option(parser, "--timeout", type=arguments.positive_float, default=5.0,
                     help="seconds to connect and to get the message back")


def run(parser, args):
    try:
        rtt = ping(args.url, args.transport, args.timeout)
    except (OSError, websocket_client.WebSocketException) as exc:
        print("ping %s: failed: %s" % (args.url, connections.failure_reason(exc) if isinstance(exc, OSError) else exc),
              file=sys.stderr)
        return 1
    print("ping %s: round trip %.2f ms" % (args.url, rtt * 1000))
    return 0
