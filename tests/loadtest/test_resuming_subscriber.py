"""The load client's resuming subscriber against a real broker: across drops it counts
no gap and no duplicate, and across a broker's restart exactly one gap."""

from loadtest.framing.resuming import ResumingSubscriber
from sockjs_clients import WebSocketClient, XhrPollingClient, XhrStreamingClient

AUTH = {"Authorization": "Bearer t"}


def delivered(subscriber, client, count):
    """The messages ``client`` brings to ``subscriber``, until ``count`` are delivered."""
    out = []
    while len(out) < count:
        out += [message for _, message in filter(None, map(subscriber.receive, client.receive()))]
    return out


def test_drops_and_a_restart(start_broker):
    broker = start_broker("--publish-token", "t", "--replay", "1")
    subscriber = ResumingSubscriber()
    sequence = []
    for n, kind in enumerate((WebSocketClient, XhrStreamingClient, XhrPollingClient)):
        with kind(broker.url, query=subscriber.query()) as client:
            broker.request("POST", "/publish", b"%d" % n, AUTH)
            sequence += delivered(subscriber, client, 1 if n == 0 else 2)
        broker.request("POST", "/publish", b"missed %d" % n, AUTH)
    assert sequence == ["0", "missed 0", "1", "missed 1", "2"]
    assert (subscriber.duplicates, dict(subscriber.gaps)) == (0, {})
    restarted = start_broker("--publish-token", "t", "--replay", "1")
    restarted.request("POST", "/publish", b"after", AUTH)
    with WebSocketClient(restarted.url, query=subscriber.query()) as client:
        assert delivered(subscriber, client, 1) == ["after"]
    assert dict(subscriber.gaps) == {"epoch": 1}
