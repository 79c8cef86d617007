"""The floor: what one small write to each of N loopback connections costs, and nothing else.

A sender pinned to the server's CPU writes one prebuilt websocket frame to each of N
connections with a plain non-blocking ``send`` (``TCP_NODELAY``, as every realtime server
sets), paced to a total rate; a drain on another CPU reads and discards (over
``--source-addresses`` if given). The sender's CPU time over its sends is one delivery with
no encoding, framing or bookkeeping. It prints one :class:`loadtest.records.Floor` line."""

import json
import os
import select
import selectors
import socket
import sys
import time

from broker.protocol.frames import websocket_frame
from broker.runtime import interpreter
from loadtest import affinity, arguments, records
from loadtest.framing import endpoints
from loadtest.procstat import cpu_seconds

PAYLOAD = b'a["{\\"c\\":123,\\"s\\":4567,\\"t\\":1700000000.123456,\\"p\\":\\"........\\"}"]'


def measure(connections, rate, seconds, cpu=None, drain_cpu=None, source_addresses=()):
    """Run the send loop; its :class:`loadtest.records.Floor`."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=connections)
    address = listener.getsockname()
    drain_gone, drain_alive = os.pipe()
    drain_pid = os.fork()
    if drain_pid == 0:
        listener.close()
        os.close(drain_gone)
        os._exit(_drain(address, connections, drain_cpu, source_addresses))
    os.close(drain_alive)
    try:
        affinity.pin(0, cpu)
        peers = _accept(listener, connections, drain_gone)
        listener.close()
        for peer in peers:
            peer.setblocking(False)
            peer.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sent = _send_rounds(peers, websocket_frame(PAYLOAD), rate, seconds)
        for peer in peers:
            peer.close()
    finally:
        os.close(drain_gone)
        _, status = os.waitpid(drain_pid, 0)
    return records.Floor(connections=connections, rate=rate, frame_bytes=len(websocket_frame(PAYLOAD)), cpu=cpu,
                         runtime=interpreter(), drain_ok=os.waitstatus_to_exitcode(status) == 0, **sent)


def _accept(listener, connections, drain_gone, timeout=30.0):
    """The drain's connections; OSError as soon as the drain has exited (``drain_gone`` is readable)."""
    peers = []
    deadline = time.monotonic() + timeout
    while len(peers) < connections:
        readable, _, _ = select.select([drain_gone, listener], [], [], max(0, deadline - time.monotonic()))
        if drain_gone in readable:
            raise OSError("the drain exited after %d of %d connections" % (len(peers), connections))
        if not readable:
            raise OSError("only %d of %d connections within %g s" % (len(peers), connections, timeout))
        peers.append(listener.accept()[0])
    return peers


def _send_rounds(peers, frame, rate, seconds):
    rounds_per_s = max(rate / len(peers), 1e-3)
    interval = 1.0 / rounds_per_s
    sends = blocked = 0
    start_cpu = cpu_seconds(os.getpid())
    start = next_round = time.monotonic()
    deadline = start + seconds
    while next_round < deadline:
        for peer in peers:
            try:
                peer.send(frame)
                sends += 1
            except BlockingIOError:
                blocked += 1
        next_round += interval
        pause = next_round - time.monotonic()
        if pause > 0:
            time.sleep(pause)
    duration = time.monotonic() - start
    used = cpu_seconds(os.getpid()) - start_cpu
    return {"duration_s": round(duration, 3), "sends": sends, "blocked": blocked,
            "sends_per_s": round(sends / duration, 1), "cpu_load": round(used / duration, 3),
            "cpu_us_per_send": round(used * 1e6 / sends, 3) if sends else None}


def _drain(address, connections, cpu, source_addresses=()):
    """Connect ``connections`` sockets to ``address`` and read until every one is closed: the exit status."""
    try:
        affinity.pin(0, cpu)
        selector = selectors.DefaultSelector()
        for n in range(connections):
            sock = socket.create_connection(address, timeout=30,
                                            source_address=endpoints.source_address(source_addresses, n))
            sock.setblocking(False)
            selector.register(sock, selectors.EVENT_READ)
        open_count = connections
        while open_count:
            ready = selector.select(timeout=30)
            if not ready:
                raise TimeoutError("no data for 30 s with %d connections open" % open_count)
            for key, _ in ready:
                if not key.fileobj.recv(262144):
                    selector.unregister(key.fileobj)
                    key.fileobj.close()
                    open_count -= 1
        return 0
    except OSError as error:
        print("floor drain: %s" % error, file=sys.stderr, flush=True)
        return 1


SUMMARY = "the bare send loop: what one write to each of N loopback connections costs"
DESCRIPTION = __doc__.split("\n")[0]


def add_arguments(parser):
    arguments.option(parser, "--connections", type=arguments.positive_int, default=1000, help="loopback connections")
    arguments.option(parser, "--rate", type=arguments.positive_float, default=100000, help="sends per second in total")
    arguments.option(parser, "--seconds", type=arguments.positive_float, default=10, help="how long to send")
    arguments.option(parser, "--cpu", type=int, help="pin the sender to this CPU")
    arguments.option(parser, "--drain-cpu", type=int, help="pin the reader to this CPU")
    arguments.option(parser, "--source-addresses", type=arguments.parse_source_addresses, default=(),
                     shown="none", help="local loopback addresses for the reader's connections, e.g. "
                     "127.0.0.2-127.0.0.9")


def run(parser, args):
    try:
        result = measure(args.connections, args.rate, args.seconds, args.cpu, args.drain_cpu, args.source_addresses)
    except OSError as error:
        parser.exit(1, "floor: %s\n" % error)
    print(json.dumps(result.as_dict()), flush=True)
    return 0
