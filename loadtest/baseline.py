"""The seed study's baseline: a minimal broadcast chat on plain sockjs-tornado.

Every message a client sends goes to every connected client with
``SockJSConnection.broadcast``, nothing more. ``compare`` measures it beside
the broker to show what the broker adds; only the process plumbing (listen,
announce, stop on a signal) is shared with the broker.

    python -m loadtest.baseline --host 127.0.0.1 --port 0
"""

import argparse
import asyncio

import tornado.httpserver
import tornado.web
from sockjs.tornado import SockJSConnection, SockJSRouter

from broker.app import serve_until_signalled

PREFIX = "/broadcast"


class ChatConnection(SockJSConnection):
    participants = set()

    def on_open(self, request):
        self.participants.add(self)

    def on_message(self, message):
        self.broadcast(self.participants, message)

    def on_close(self):
        self.participants.discard(self)


async def serve(host, port, connection=ChatConnection):
    """Serve the chat until SIGTERM or SIGINT."""
    app = tornado.web.Application(SockJSRouter(connection, PREFIX).urls)
    await serve_until_signalled(tornado.httpserver.HTTPServer(app), host, port, "sockjs-tornado", PREFIX)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m loadtest.baseline", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.host, args.port))
    except OSError as error:
        parser.exit(1, "sockjs-tornado: cannot listen on %s:%d: %s\n" % (args.host, args.port, error.strerror))


if __name__ == "__main__":
    main()
