"""``python -m loadtest ping --url URL``: one connection, one message, its round trip.

The connection is the load client's own (:class:`loadtest.client.connections.ClientGroup`
of one), so ``ping`` checks exactly what a sweep would use.
"""

import asyncio
import sys

from loadtest import arguments
from loadtest.client import connections, tls_context
from loadtest.errors import ConnectError
from loadtest.framing import endpoints

# How often the wait for the echo looks; the round trip itself is timed when the echo is read.
POLL_S = 0.001


async def round_trip(url, transport=endpoints.WEBSOCKET, timeout=5.0):
    """Round trip in seconds of one message through the server at ``url`` (ConnectError if none within ``timeout``)."""
    group = connections.ClientGroup(connections.GroupSpec([url], transport))
    try:
        failures = await group.connect(1, timeout=timeout)
        if failures:
            raise ConnectError(", ".join(sorted(failures)))
        (connection,) = group.connections
        seq, _ = connection.send()
        deadline = asyncio.get_running_loop().time() + timeout
        while seq in connection.protocol.pending:
            if not connection.alive:
                raise ConnectError(connection.closed_reason)
            if asyncio.get_running_loop().time() > deadline:
                raise ConnectError("no echo within %g s" % timeout)
            await asyncio.sleep(POLL_S)
        return group.histogram.get_max_value() / 1e6
    finally:
        group.close()


def ping(url, transport=endpoints.WEBSOCKET, timeout=5.0):
    """:func:`round_trip`, on a loop of its own."""
    return asyncio.run(round_trip(url, transport, timeout))


SUMMARY = "one connection, one message, its round trip"
DESCRIPTION = "One connection, one message, its round trip."


def add_arguments(parser):
    arguments.option(parser, "--url", type=arguments.loopback_url, default=arguments.DEFAULT_URL,
                     help="SockJS prefix (loopback only; https: over TLS)")
    arguments.option(parser, "--tls-ca", **arguments.TLS_CA)
    arguments.option(parser, "--transport", **arguments.TRANSPORT)
    arguments.option(parser, "--timeout", type=arguments.positive_float, default=5.0,
                     help="seconds to connect and to get the message back")


def run(parser, args):
    tls_context.trust(args.tls_ca)
    try:
        rtt = ping(args.url, args.transport, args.timeout)
    except ConnectError as error:
        print("ping %s: failed: %s" % (args.url, error), file=sys.stderr)
        return 1
    print("ping %s: round trip %.2f ms" % (args.url, rtt * 1000))
    return 0
