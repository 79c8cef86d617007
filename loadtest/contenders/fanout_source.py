"""A minimal SockJS-over-websocket source for ``selftest``: it only sends.

It follows the launch contract of :mod:`loadtest.contenders.child_process`. Each connection gets
the SockJS open frame; once ``--connections`` are open, each receives the same prebuilt
``a["m1",...,"mK"]`` frame, as fast as its socket accepts it (flood) or once per round at
``--rounds-per-s`` (paced, like a broker broadcasting). Far cheaper per message than any real
server, so the client's own limit shows.
"""

import argparse
import selectors
import socket
import time

from broker.protocol.frames import websocket_frame
from loadtest.framing import payload, websocket_frames

FILLER_CLIENT = 999999999


def broadcast_frame(per_frame):
    messages = [b'"' + payload.message(FILLER_CLIENT, seq, 1700000000000000) + b'"' for seq in range(per_frame)]
    return websocket_frame(b"a[" + b",".join(messages) + b"]")


def handshake_answer(request):
    for line in request.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            accept = websocket_frames.accept_value(value.strip())
            return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept)
    return None


class Source:
    def __init__(self, host, port, per_frame, connections, rounds_per_s):
        self.frame = broadcast_frame(per_frame)
        self.connections = connections
        self.round_s = 1.0 / rounds_per_s if rounds_per_s else None
        self.listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind((host, port))
        self.listener.listen(1024)
        self.listener.setblocking(False)
        self.selector = selectors.DefaultSelector()
        self.selector.register(self.listener, selectors.EVENT_READ, "accept")
        self.requests = {}
        self.unsent = {}

    @property
    def address(self):
        return self.listener.getsockname()[:2]

    @property
    def sending(self):
        return len(self.unsent) >= self.connections

    def run(self):
        next_round = None
        while True:
            timeout = None if next_round is None else max(0.0, next_round - time.monotonic())
            for key, events in self.selector.select(timeout):
                self._event(key.fileobj, key.data, events)
            if not (self.round_s and self.sending):
                continue
            if next_round is None:
                next_round = time.monotonic()
            if time.monotonic() >= next_round:
                for sock in list(self.unsent):
                    self._send(sock, once=True)
                next_round += self.round_s

    def _event(self, sock, state, events):
        if state == "accept":
            conn, _ = self.listener.accept()
            conn.setblocking(False)
            self.requests[conn] = b""
            self.selector.register(conn, selectors.EVENT_READ, "handshake")
        elif state == "handshake":
            self._handshake(sock)
        elif events & selectors.EVENT_READ and _recv(sock) == b"":
            self._drop(sock)
        elif events & selectors.EVENT_WRITE:
            self._send(sock, once=bool(self.round_s))

    def _handshake(self, sock):
        data = _recv(sock)
        if data is None:
            return
        self.requests[sock] += data
        complete = b"\r\n\r\n" in self.requests[sock]
        answer = handshake_answer(self.requests[sock]) if complete else None
        if not data or complete and answer is None:
            self._drop(sock)
        elif answer is not None:
            del self.requests[sock]
            sock.sendall(answer + websocket_frame(b"o"))
            self.unsent[sock] = b""
            self.selector.modify(sock, selectors.EVENT_READ, "open")
            if self.sending and not self.round_s:
                for ready in [sock] if len(self.unsent) > self.connections else self.unsent:
                    self.selector.modify(ready, selectors.EVENT_READ | selectors.EVENT_WRITE, "open")

    def _send(self, sock, once):
        """Flush what is left, then send frames: one if ``once``, else until the socket is full."""
        data = self.unsent[sock] or self.frame
        try:
            while True:
                sent = sock.send(data)
                if sent < len(data):
                    data = data[sent:]
                elif once and data is self.frame:
                    data = b""
                    break
                else:
                    data = self.frame
        except BlockingIOError:
            pass
        except OSError:
            self._drop(sock)
            return
        self.unsent[sock] = b"" if data is self.frame else data

    def _drop(self, sock):
        self.requests.pop(sock, None)
        self.unsent.pop(sock, None)
        self.selector.unregister(sock)
        sock.close()


def _recv(sock):
    """Bytes read, b"" when the peer closed, None when nothing is there yet."""
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m loadtest.contenders.fanout_source", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--per-frame", type=int, default=10, help="messages in each SockJS frame")
    parser.add_argument("--connections", type=int, default=1, help="start sending once this many connections are open")
    parser.add_argument("--rounds-per-s", type=float,
                        help="send one frame to every connection this often (default: flood)")
    args = parser.parse_args(argv)
    source = Source(args.host, args.port, args.per_frame, args.connections, args.rounds_per_s)
    print("fanout source listening on http://%s:%d/broadcast" % source.address, flush=True)
    try:
        source.run()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
