"""Counters the broker keeps (POST /publish?key=NAME&op=add|max): exact decimal totals,
sent to viewers as strings, given at once to every viewer that opens or resumes, and a
retry with its Idempotency-Key added once; anything out of bounds refused, changing nothing."""

import concurrent.futures
import http.client
import json

import pytest

from sockjs_clients import WebSocketClient, XhrPollingClient

AUTH = {"Authorization": "Bearer t"}


def count(broker, name, amount, op="add", key=None):
    """(status, answer) of one counter operation."""
    headers = dict(AUTH, **({"Idempotency-Key": key} if key else {}))
    return broker.request("POST", "/publish?key=%s&op=%s" % (name, op), amount.encode(), headers)


def add_many(broker, name, amount, times, workers=8):
    """``times`` adds of ``amount`` from ``workers`` backends at once, each on a keep-alive connection."""
    host, port = broker.origin[len("http://"):].split(":")

    def backend(n):
        conn = http.client.HTTPConnection(host, int(port), timeout=10)
        try:
            for _ in range(n):
                conn.request("POST", "/publish?key=%s&op=add" % name, amount, AUTH)
                response = conn.getresponse()
                assert response.status == 200, (response.status, response.read())
                response.read()
        finally:
            conn.close()

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        for done in [pool.submit(backend, times // workers) for _ in range(workers)]:
            done.result()


def totals(messages, name):
    return [m["value"] for m in messages if isinstance(m, dict) and m.get("counter") == name]


def test_concurrent_adds_of_a_cent_make_an_exact_total(start_broker):
    broker = start_broker("--publish-token", "t", "--replay", "0")
    with WebSocketClient(broker.url) as viewer:
        add_many(broker, "raised", b"0.01", 4000)
        seen = []
        while "40.00" not in seen:
            seen += totals(viewer.receive(), "raised")
    values = [int(value.replace(".", "")) for value in seen]
    assert values == sorted(values), "a viewer never sees its total go down"
    assert broker.stats()["counters"] == {"raised": "40.00"}
    status, metrics = broker.request("GET", "/metrics")
    assert status == 200 and "sockjs_broker_counters 1.0" in metrics
    assert 'sockjs_broker_counter_total{counter="raised"} 40.0' in metrics


def test_the_answer_carries_the_exact_total_and_its_decimals(start_broker):
    broker = start_broker("--publish-token", "t")
    assert count(broker, "raised", "25")[1]["value"] == "25"
    status, answer = count(broker, "raised", "-3.50")
    assert status == 200 and answer["value"] == "21.50" and answer["position"]["offset"] == "2"
    assert count(broker, "raised", "0.000001")[1]["value"] == "21.500001"
    assert count(broker, "big", "999999999999.999999")[1]["value"] == "999999999999.999999"
    assert count(broker, "top", "10", op="max")[1]["value"] == "10"
    assert count(broker, "top", "7.5", op="max")[1]["value"] == "10", "a max below changes nothing"
    assert count(broker, "top", "12.25", op="max")[1]["value"] == "12.25"
    assert broker.stats()["messages_in"] == 6, "the max below sent nothing"


def test_a_viewer_gets_every_counter_at_once_without_replay(start_broker):
    broker = start_broker("--publish-token", "t", "--replay", "0")
    count(broker, "raised", "10.10")
    count(broker, "donors", "1")
    count(broker, "raised", "5")
    broker.request("POST", "/publish", b"a chat line", AUTH)
    with WebSocketClient(broker.url) as viewer:
        assert viewer.receive() == [{"counter": "donors", "value": "1"}, {"counter": "raised", "value": "15.10"}]
    with XhrPollingClient(broker.url, query="positions=1") as poller:
        start, donors, raised = poller.collect(3)
        assert start["c"] == "open" and start["o"] == "4"
        assert (donors, raised) == ({"o": "2", "d": {"counter": "donors", "value": "1"}},
                                    {"o": "3", "d": {"counter": "raised", "value": "15.10"}})
        epoch = start["epoch"]
    count(broker, "raised", "0.90")
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=4" % epoch) as resumed:
        start, *state = resumed.collect(3)
        assert start["c"] == "resumed"
        assert state == [{"o": "2", "d": {"counter": "donors", "value": "1"}},
                         {"o": "5", "d": {"counter": "raised", "value": "16.00"}}]


def test_a_retry_with_its_idempotency_key_adds_once(start_broker):
    broker = start_broker("--publish-token", "t")
    first = count(broker, "raised", "25", key="donation-1")
    assert count(broker, "raised", "25", key="donation-1") == first
    assert count(broker, "raised", "30", key="donation-1")[0] == 422
    assert count(broker, "raised", "1", key="donation-2")[1]["value"] == "26"
    assert broker.stats()["counters"] == {"raised": "26"}


@pytest.mark.parametrize("path, body, error", [
    ("?key=raised&op=add", b"1e3", "an amount is a decimal number"),
    ("?key=raised&op=add", b"12.5.1", "an amount is a decimal number"),
    ("?key=raised&op=add", b"NaN", "an amount is a decimal number"),
    ("?key=raised&op=add", b"+5", "an amount is a decimal number"),
    ("?key=raised&op=add", b"0.0000001", "an amount is a decimal number"),
    ("?key=raised&op=add", b"1000000000000", "an amount is a decimal number"),
    ("?key=raised&op=max", b"five", "an amount is a decimal number"),
    ("?key=raised&op=add", b"999999999999", "more than 12 digits before the point"),
    ("?key=raised&op=mul", b"2", "?op= is one of add, max, set"),
    ("?op=add", b"2", "name it with ?key=NAME"),
    ("?key=has%20space&op=add", b"2", "no space"),
    ("?key=" + "x" * 65 + "&op=add", b"2", "printable ASCII"),
])
def test_bad_amounts_operations_and_keys_are_refused_changing_nothing(start_broker, path, body, error):
    broker = start_broker("--publish-token", "t")
    assert count(broker, "raised", "1")[0] == 200
    status, answer = broker.request("POST", "/publish" + path, body, AUTH)
    assert status == 400 and error in answer["error"], (status, answer)
    assert broker.stats()["counters"] == {"raised": "1"}
    assert broker.stats()["messages_in"] == 1


def test_a_backend_cannot_publish_as_a_counter(start_broker):
    broker = start_broker("--publish-token", "t")
    count(broker, "raised", "5")
    forged = json.dumps({"counter": "raised", "value": "1000000"}).encode()
    assert broker.request("POST", "/publish?key=raised", forged,
                          dict(AUTH, **{"Content-Type": "application/json"}))[0] == 422
    assert broker.request("POST", "/publish?key=raised", b"1000000", AUTH)[0] == 200
    with WebSocketClient(broker.url) as viewer:
        assert viewer.receive() == [{"counter": "raised", "value": "5"}], "the set under ?key=raised is no counter"
    assert broker.stats()["counters"] == {"raised": "5"}
