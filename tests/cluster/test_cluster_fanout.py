"""Three brokers, one Redis: every message reaches every client, all in one order."""

import contextlib
import threading

from sockjs_clients import RawWebSocketClient, WebSocketClient, XhrStreamingClient

from cluster_clients import publish, receive_until

PER_PUBLISHER = 60


def test_concurrent_publishers_at_three_brokers_give_every_client_one_sequence(start_redis, start_cluster):
    brokers = start_cluster(start_redis(), 3)
    kinds = [WebSocketClient, RawWebSocketClient, XhrStreamingClient]
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(kind(b.url, timeout=20)) for b in brokers for kind in kinds]
        senders = [stack.enter_context(WebSocketClient(b.url, timeout=20)) for b in brokers]
        statuses = []

        def post_all(b):
            statuses.extend(publish(brokers[b], "http%d:%d" % (b, n))[0] for n in range(PER_PUBLISHER))

        posters = [threading.Thread(target=post_all, args=(b,)) for b in range(3)]
        for thread in posters:
            thread.start()
        for n in range(0, PER_PUBLISHER, 3):
            for b, sender in enumerate(senders):
                sender.send(*["ws%d:%d" % (b, n + k) for k in range(3)])
        for thread in posters:
            thread.join(30)
        assert statuses == [200] * 3 * PER_PUBLISHER
        assert publish(brokers[0], "end")[0] == 200

        sequences = [receive_until(c, "end") for c in clients + senders]
    first = sequences[0]
    assert len(first) == 6 * PER_PUBLISHER + 1
    for sequence in sequences[1:]:
        assert sequence == first
    for source in ["http%d:" % b for b in range(3)] + ["ws%d:" % b for b in range(3)]:
        numbers = [int(m.split(":")[1]) for m in first if m.startswith(source)]
        assert numbers == list(range(PER_PUBLISHER)), source
    stats = [b.stats() for b in brokers]
    for s in stats:
        assert s["backplane"]["state"] == "up" and s["backplane"]["delivered"] == len(first)
        assert s["flushes"] <= len(first)
    assert sum(s["messages_in"] for s in stats) == len(first)


def test_what_a_client_sends_in_one_frame_reaches_another_broker_as_one_frame(start_redis, start_cluster):
    # The three messages go to Redis in one MULTI/EXEC; sent as a plain pipeline
    # of XADDs, the other broker's blocked XREAD would be answered after the first.
    brokers = start_cluster(start_redis(), 2)
    with WebSocketClient(brokers[0].url) as sender, WebSocketClient(brokers[1].url) as listener:
        for round_ in range(5):
            batch = ["r%d:%d" % (round_, n) for n in range(3)]
            sender.send(*batch)
            assert listener.receive() == batch
            assert sender.receive() == batch
