"""Under load, every healthy client receives every message, in publish order."""

import contextlib
import re

from sockjs_clients import RawWebSocketClient, WebSocketClient, XhrStreamingClient

CLIENTS = 300
PUBLISHERS = 3
PER_PUBLISHER = 100


def test_sequence_numbers_arrive_complete_and_in_order_at_every_client(start_broker):
    broker = start_broker()
    with contextlib.ExitStack() as stack:
        kinds = [WebSocketClient, RawWebSocketClient, XhrStreamingClient]
        clients = [stack.enter_context(kinds[i % 3](broker.url, timeout=30)) for i in range(CLIENTS)]
        publishers = clients[:PUBLISHERS]
        for seq in range(0, PER_PUBLISHER, 5):
            for p, publisher in enumerate(publishers):
                publisher.send(*["p%d:%d" % (p, seq + k) for k in range(5)])
        total = PUBLISHERS * PER_PUBLISHER
        for client in clients:
            received = client.collect(total)
            for p in range(PUBLISHERS):
                seqs = [int(m.split(":")[1]) for m in received if re.match("p%d:" % p, m)]
                assert seqs == list(range(PER_PUBLISHER)), (client.transport, p)
    stats = broker.stats()
    assert stats["messages_out"] == total * CLIENTS
    assert stats["flushes"] < total
