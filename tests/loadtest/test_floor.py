"""The floor's drain: its connections come from the source addresses it is given."""

import socket
import threading

from loadtest import floor


def test_the_drain_spreads_its_connections_over_the_source_addresses():
    with socket.create_server(("127.0.0.1", 0)) as listener:
        listener.settimeout(10)
        results = []
        drain = threading.Thread(target=lambda: results.append(
            floor._drain(listener.getsockname(), 4, None, ["127.0.0.2", "127.0.0.3"])))
        drain.start()
        peers = [listener.accept()[0] for _ in range(4)]
        sources = sorted(peer.getpeername()[0] for peer in peers)
        for peer in peers:
            peer.sendall(b"frame")
            peer.close()
        drain.join(10)
    assert sources == ["127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.3"]
    assert results == [0]
