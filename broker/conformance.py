"""The services the SockJS protocol test suite (sockjs-protocol) expects.

``python -m broker.conformance --port 8081`` serves, through ``BrokerRouter``
and so through the broker's own transports:

- ``/echo``: every message goes back to its sender; streaming responses end
  after exactly 4096 bytes, the limit the suite counts (production streams
  draw theirs below ``response_limit``);
- ``/close``: every session is closed at once with 3000 "Go away!";
- ``/disabled_websocket_echo``: ``/echo`` without the websocket transport;
- ``/cookie_needed_echo``: ``/echo`` with JSESSIONID cookies on.
"""

import asyncio

from sockjs.tornado import SockJSConnection
from tornado.httpserver import HTTPServer
from tornado.web import Application

from broker.app import READ_CHUNK_BYTES, application_settings, max_body_size, serve_until_signalled
from broker.config import PORT, listen_address
from broker.core.node import ClientRules
from broker.flags import Parser
from broker.transports.router import BrokerRouter

MAX_MESSAGE_SIZE = 64 * 1024
RESPONSE_LIMIT = 4096


# The suite's contract: every stream carries exactly RESPONSE_LIMIT bytes, then ends; it
# reads htmlfile by chunks.
STREAM_LIMITS = {"response_limit": RESPONSE_LIMIT, "draw_response_limit": False, "chunked_htmlfile": True}


class EchoConnection(SockJSConnection):
    def on_message(self, message):
        self.send(message)


class CloseConnection(SockJSConnection):
    def on_open(self, info):
        self.close()


SERVICES = [
    ("/echo", EchoConnection, {}),
    ("/close", CloseConnection, {}),
    ("/disabled_websocket_echo", EchoConnection, {"disabled_transports": ["websocket"]}),
    ("/cookie_needed_echo", EchoConnection, {"jsessionid": True}),
]


def make_app():
    routes = []
    for prefix, connection, settings in SERVICES:
        router = BrokerRouter(connection, prefix, dict(settings, **STREAM_LIMITS),
                              ClientRules(max_message_size=MAX_MESSAGE_SIZE))
        routes += router.urls
    return Application(routes, **application_settings())


async def run(host, port):
    server = HTTPServer(make_app(), max_body_size=max_body_size(MAX_MESSAGE_SIZE), chunk_size=READ_CHUNK_BYTES)
    await serve_until_signalled(server, host, port, "conformance", "/echo")


def main(argv=None):
    parser = Parser(
        prog="python -m broker.conformance",
        description="The SockJS services the sockjs-protocol test suite runs against.")
    parser.add_argument("--host", type=listen_address, default="127.0.0.1", help="address to listen on [%(default)s]")
    parser.add_argument("--port", type=PORT, default=8081,
                        help="port to listen on, 0 for any free port; range: %s [%%(default)s]" % PORT.range)
    args = parser.parse_args(argv)
    asyncio.run(run(args.host, args.port))


if __name__ == "__main__":
    main()
