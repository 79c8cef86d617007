"""The baseline sockjs-tornado chat, blocking its loop ``--delay`` seconds per message.

It follows the launch contract of :mod:`loadtest.contenders.child_process`, so a sweep can be
pointed at a server that is overloaded on purpose.
"""

import argparse
import asyncio
import time

from loadtest.contenders.stock_sockjs_tornado import ChatConnection, serve


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--delay", type=float, default=0.0, help="seconds to block per message")
    args = parser.parse_args()

    class SlowConnection(ChatConnection):
        def on_message(self, message):
            time.sleep(args.delay)
            super().on_message(message)

    asyncio.run(serve(args.host, args.port, SlowConnection))


if __name__ == "__main__":
    main()
