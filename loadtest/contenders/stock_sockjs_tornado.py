"""The seed study's baseline: a minimal broadcast chat on plain sockjs-tornado.

Every message a client sends goes to every connected client with ``SockJSConnection.broadcast``,
nothing more: ``compare`` measures it beside the broker, so it shares nothing with the broker
(it follows the launch contract of :mod:`loadtest.contenders.child_process` on its own).

    python -m loadtest.contenders.stock_sockjs_tornado --host 127.0.0.1 --port 0
"""

import argparse
import asyncio
import signal

import tornado.httpserver
import tornado.netutil
import tornado.web
from sockjs.tornado import SockJSConnection, SockJSRouter

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
    """Serve the chat on ``host:port``; print ``sockjs-tornado listening on <url>``; stop at SIGTERM or SIGINT."""
    server = tornado.httpserver.HTTPServer(tornado.web.Application(SockJSRouter(connection, PREFIX).urls))
    sockets = tornado.netutil.bind_sockets(port, host)
    server.add_sockets(sockets)
    shown_host = "[%s]" % host if ":" in host else host
    print("sockjs-tornado listening on http://%s:%d%s" % (shown_host, sockets[0].getsockname()[1], PREFIX),
          flush=True)
    stopping = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stopping.set)
    await stopping.wait()
    server.stop()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m loadtest.contenders.stock_sockjs_tornado", description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        asyncio.run(serve(args.host, args.port))
    except OSError as error:
        parser.exit(1, "sockjs-tornado: cannot listen on %s:%d: %s\n" % (args.host, args.port, error.strerror))


if __name__ == "__main__":
    main()
