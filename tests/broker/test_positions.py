"""Positions and resume, on every transport: ``?positions=1&epoch=E&since=O``."""

import json
import time

import pytest

from broker.core.resumes import AHEAD_WAIT_S
from sockjs_clients import ALL, RawWebSocketClient, WebSocketClient

AUTH = {"Authorization": "Bearer t"}


def positioned(client, count):
    """The next ``count`` messages of ``client``, each its envelope as a dict."""
    messages = client.collect(count)
    if isinstance(client, RawWebSocketClient):
        return [json.loads(m) for m in messages]
    return messages


def publish(broker, *values):
    for value in values:
        broker.request("POST", "/publish", value.encode(), AUTH)


@pytest.mark.parametrize("client", ALL, ids=lambda c: c.transport)
def test_every_transport_resumes_after_its_offset_with_nothing_missed_or_twice(start_broker, client):
    broker = start_broker("--replay", "1", "--publish-token", "t")
    publish(broker, "before")
    with client(broker.url, query="positions=1") as first:
        start, replayed = positioned(first, 2)
        epoch = start["epoch"]
        assert start == {"c": "open", "epoch": epoch, "o": "1"}
        assert replayed == {"o": "1", "d": "before"}
        publish(broker, "a")
        assert positioned(first, 1) == [{"o": "2", "d": "a"}]
    publish(broker, "b", "c")
    with client(broker.url, query="positions=1&epoch=%s&since=2" % epoch) as again:
        assert positioned(again, 3) == [{"c": "resumed", "epoch": epoch, "o": "4"},
                                        {"o": "3", "d": "b"}, {"o": "4", "d": "c"}]
        publish(broker, "d")
        assert positioned(again, 1) == [{"o": "5", "d": "d"}]
    with client(broker.url) as plain:
        assert plain.collect(1) == ["d"], "without positions, the bytes of old"


def test_a_gap_is_told_then_the_latest_state(start_broker):
    broker = start_broker("--replay", "1", "--history", "2", "--publish-token", "t")
    publish(broker, "1", "2", "3", "4")
    with WebSocketClient(broker.url, query="positions=1") as first:
        epoch = first.receive()[0]["epoch"]
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=1" % epoch) as late:
        assert late.collect(2) == [{"c": "gap", "epoch": epoch, "o": "4", "reason": "expired"},
                                   {"o": "4", "d": "4"}]
    with WebSocketClient(broker.url, query="positions=1&epoch=another&since=4") as stranger:
        assert stranger.receive()[0]["reason"] == "epoch"
    starts = broker.stats()["starts"]
    assert (starts["open"], starts["expired"], starts["epoch"]) == (1, 1, 1)


def test_a_restarted_broker_has_another_epoch(start_broker):
    broker = start_broker("--publish-token", "t")
    publish(broker, "1")
    with WebSocketClient(broker.url, query="positions=1") as client:
        epoch = client.receive()[0]["epoch"]
    again = start_broker("--publish-token", "t")
    with WebSocketClient(again.url, query="positions=1&epoch=%s&since=1" % epoch) as client:
        start = client.receive()[0]
        assert start["c"] == "gap" and start["reason"] == "epoch" and start["epoch"] != epoch


def test_a_resume_from_an_offset_the_room_never_gave_is_an_unknown_gap_at_once(start_broker):
    broker = start_broker("--replay", "1", "--publish-token", "t")
    publish(broker, "1")
    with WebSocketClient(broker.url, query="positions=1") as first:
        epoch = first.receive()[0]["epoch"]
    asked = time.monotonic()
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=99999999999999" % epoch) as ahead:
        assert ahead.collect(2) == [{"c": "gap", "epoch": epoch, "o": "1", "reason": "unknown"}, {"o": "1", "d": "1"}]
        assert time.monotonic() - asked < AHEAD_WAIT_S / 2, "answered at once: nothing to wait for in a room alone"
