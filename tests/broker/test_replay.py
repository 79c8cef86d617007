"""--replay N: a new client first receives the last N messages."""

import pytest

from sockjs_clients import ALL, WebSocketClient

AUTH = {"Authorization": "Bearer t"}


@pytest.mark.parametrize("client", ALL, ids=lambda c: c.transport)
def test_new_client_gets_the_last_messages_then_live_ones(start_broker, client):
    broker = start_broker("--replay", "2", "--publish-token", "t")
    with WebSocketClient(broker.url) as witness:
        for value in ("1", "2", "3"):
            broker.request("POST", "/publish", value.encode(), AUTH)
        assert witness.collect(3) == ["1", "2", "3"]
        with client(broker.url) as late:
            assert late.collect(2) == ["2", "3"]
            broker.request("POST", "/publish", b"4", AUTH)
            assert late.receive() == ["4"]


def test_counter_shows_its_value_on_connect(start_broker):
    broker = start_broker("--replay", "1", "--publish-token", "t", "--no-client-publish")
    headers = dict(AUTH, **{"Content-Type": "application/json"})
    broker.request("POST", "/publish", b'{"raised": 10}', headers)
    broker.request("POST", "/publish", b'{"raised": 25}', headers)
    with WebSocketClient(broker.url) as viewer:
        assert viewer.receive() == [{"raised": 25}]


def test_no_replay_by_default(start_broker):
    broker = start_broker("--publish-token", "t")
    broker.request("POST", "/publish", b"old", AUTH)
    with WebSocketClient(broker.url) as client:
        broker.request("POST", "/publish", b"new", AUTH)
        assert client.receive() == ["new"]
