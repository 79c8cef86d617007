"""What a start costs a running broker: its first batch's bound (``--max-buffer``), not the
history's length (:mod:`broker.core.resumes`)."""

from loadtest.procstat import cpu_seconds
from sockjs_clients import WebSocketClient

HISTORY = 100000
A_FRAME = 10000
RESUMES = 20
# Beyond twice what RESUMES from the newest offset cost the broker, the CPU seconds RESUMES from
# the oldest may take: 2.5 ms each, a few of the clock's ticks (/proc counts hundredths). Reading
# the whole history, they took 15 ms more each on CPython, 25 ms on PyPy.
MORE_CPU_S = 0.05


def filled(broker):
    """The room's epoch, once ``broker`` keeps HISTORY messages, published by one client in
    frames of A_FRAME messages (it reads each back: the sender is a subscriber)."""
    with WebSocketClient(broker.url, query="positions=1") as publisher:
        epoch = publisher.receive()[0]["epoch"]
        for _ in range(HISTORY // A_FRAME):
            publisher.send(*["v"] * A_FRAME)
            publisher.collect(A_FRAME)
    return epoch


def cpu_of_starts(broker, query):
    """The broker's CPU seconds for RESUMES clients connecting with ``query``, one after
    another, each until its start arrives."""
    before = cpu_seconds(broker.server.pid)
    for _ in range(RESUMES):
        with WebSocketClient(broker.url, query=query) as client:
            client.receive()
    return cpu_seconds(broker.server.pid) - before


def test_a_resume_from_the_oldest_offset_costs_what_one_from_the_newest_does(start_broker):
    # --replay the whole history too: the gap's tail is as long as the history.
    broker = start_broker("--history", str(HISTORY), "--replay", str(HISTORY), "--max-buffer", "1024",
                          "--client-rate", "1000000")
    epoch = filled(broker)
    assert broker.stats()["history"]["messages"] == HISTORY
    oldest, newest = ("positions=1&epoch=%s&since=%d" % (epoch, offset) for offset in (1, HISTORY))
    with WebSocketClient(broker.url, query=oldest) as client:
        start = client.receive()  # one frame
        assert start[0]["reason"] == "expired" and start[-1] == {"o": str(HISTORY), "d": "v"}
        assert len(start) <= 1 + 1024 // 4, "the newest that fit --max-buffer, 4 bytes each"
    rounds = [(cpu_of_starts(broker, oldest), cpu_of_starts(broker, newest)) for _ in range(3)]
    from_oldest, from_newest = (min(costs) for costs in zip(*rounds))
    assert from_oldest <= 2 * from_newest + MORE_CPU_S, rounds
