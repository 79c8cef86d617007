"""A sockjs-tornado broadcast server that blocks its loop ``--delay`` seconds per message.

It follows the launch contract of :mod:`loadtest.servers` and, with ``--delay 0``,
is the plain sockjs-tornado broadcast app.
"""

import argparse
import time

import sockjs.tornado
import tornado.httpserver
import tornado.ioloop
import tornado.netutil
import tornado.web


def broadcast_connection(delay):
    class BroadcastConnection(sockjs.tornado.SockJSConnection):
        participants = set()

        def on_open(self, info):
            self.participants.add(self)

        def on_message(self, message):
            if delay:
                time.sleep(delay)
            self.broadcast(self.participants, message)

        def on_close(self):
            self.participants.discard(self)

    return BroadcastConnection


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to block per message")
    args = parser.parse_args()
    router = sockjs.tornado.SockJSRouter(broadcast_connection(args.delay), "/broadcast")
    app = tornado.web.Application(router.urls)
    sockets = tornado.netutil.bind_sockets(args.port, args.host)
    server = tornado.httpserver.HTTPServer(app)
    server.add_sockets(sockets)
    port = sockets[0].getsockname()[1]
    print("slow server listening on http://%s:%d/broadcast" % (args.host, port), flush=True)
    tornado.ioloop.IOLoop.current().start()


if __name__ == "__main__":
    main()
