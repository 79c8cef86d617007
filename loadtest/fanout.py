"""A minimal SockJS-over-websocket source that floods every connection, for ``selftest``.

``python -m loadtest.fanout --port 0 --per-frame K`` follows the launch contract of
:mod:`loadtest.servers`. Each connection gets the SockJS open frame, then the same
prebuilt ``a["m1",...,"mK"]`` frame as fast as the socket accepts it, once ``--connections`` are open: a source far
cheaper per message than any real server, so the client's own limit shows.
"""

import argparse
import selectors
import socket

from loadtest import payload, websocket

FILLER_CLIENT = 999999999


def server_frame(data):
    """An unmasked final text frame, as a server sends it."""
    length = len(data)
    if length < 126:
        header = bytes((0x81, length))
    elif length < 0x10000:
        header = bytes((0x81, 126)) + length.to_bytes(2, "big")
    else:
        header = bytes((0x81, 127)) + length.to_bytes(8, "big")
    return header + data


def flood_frame(per_frame):
    messages = [b'"' + payload.message(FILLER_CLIENT, seq, 1700000000000000) + b'"'
                for seq in range(per_frame)]
    return server_frame(b"a[" + b",".join(messages) + b"]")


def handshake_answer(request):
    for line in request.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"sec-websocket-key":
            accept = websocket.accept_value(value.strip())
            return (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                    b"Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n\r\n" % accept)
    return None


def serve(host, port, per_frame, connections):
    frame = flood_frame(per_frame)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, port))
    listener.listen(1024)
    listener.setblocking(False)
    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, "accept")
    print("fanout source listening on http://%s:%d/broadcast" % (host, listener.getsockname()[1]),
          flush=True)
    requests = {}
    unsent = {}
    while True:
        for key, events in selector.select():
            sock = key.fileobj
            if key.data == "accept":
                conn, _ = listener.accept()
                conn.setblocking(False)
                requests[conn] = b""
                selector.register(conn, selectors.EVENT_READ, "handshake")
            elif key.data == "handshake":
                data = _recv(sock)
                if data is None:
                    continue
                requests[sock] += data
                answer = handshake_answer(requests[sock]) if b"\r\n\r\n" in requests[sock] else None
                if not data or answer is None and b"\r\n\r\n" in requests[sock]:
                    del requests[sock]
                    _drop(selector, sock)
                elif answer is not None:
                    del requests[sock]
                    sock.sendall(answer + server_frame(b"o"))
                    unsent[sock] = b""
                    selector.modify(sock, selectors.EVENT_READ, "flood")
                    if len(unsent) >= connections:
                        for ready in [sock] if len(unsent) > connections else unsent:
                            selector.modify(ready, selectors.EVENT_READ | selectors.EVENT_WRITE, "flood")
            else:
                if events & selectors.EVENT_READ and _recv(sock) == b"":
                    del unsent[sock]
                    _drop(selector, sock)
                    continue
                if not events & selectors.EVENT_WRITE:
                    continue
                try:
                    data = unsent[sock] or frame
                    while True:
                        sent = sock.send(data)
                        data = data[sent:] if sent < len(data) else frame
                except BlockingIOError:
                    unsent[sock] = b"" if data is frame else data
                except OSError:
                    del unsent[sock]
                    _drop(selector, sock)


def _recv(sock):
    """Bytes read, b"" when the peer closed, None when nothing is there yet."""
    try:
        return sock.recv(65536)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _drop(selector, sock):
    selector.unregister(sock)
    sock.close()


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m loadtest.fanout", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--per-frame", type=int, default=10, help="messages in each SockJS frame")
    parser.add_argument("--connections", type=int, default=1,
                        help="start flooding once this many connections are open")
    args = parser.parse_args(argv)
    try:
        serve(args.host, args.port, args.per_frame, args.connections)
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
