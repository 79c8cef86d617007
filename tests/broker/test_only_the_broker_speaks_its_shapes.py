"""Only the broker speaks in its own shapes: a counter's total ({"counter": ..., "value": ...})
and the audience ({"audience": N}). A backend's message in one, as JSON or as a text the plain
websocket would send as those bytes, is refused with 422, publishing nothing; a client's
closes its session with 1007 and reaches nobody. What only nests them, or looks like JSON in
another shape, goes through."""

import json

import pytest

from sockjs_clients import Closed, RawWebSocketClient, WebSocketClient, XhrPollingClient, XhrStreamingClient

AUTH = {"Authorization": "Bearer t"}
JSON = dict(AUTH, **{"Content-Type": "application/json"})
FORGED_TOTAL = {"counter": "raised", "value": "999999"}


@pytest.mark.parametrize("body, headers, path", [
    (json.dumps(FORGED_TOTAL), JSON, "/publish"),
    (json.dumps(FORGED_TOTAL), dict(JSON, **{"Idempotency-Key": "forged-1"}), "/publish"),
    (json.dumps(FORGED_TOTAL), JSON, "/publish?key=raised"),
    ('{"counter": 5}', JSON, "/publish"),
    (' {"value": "1", "counter": "raised"}', AUTH, "/publish"),  # a text: the plain websocket sends it as is
    ('{"audience": 123456}', JSON, "/publish"),
    ('{"audience": 123456}', AUTH, "/publish"),
], ids=["total", "total-idempotent", "total-keyed", "counter-member", "total-as-text", "audience", "audience-as-text"])
def test_a_backend_cannot_publish_in_the_broker_shape(start_broker, body, headers, path):
    broker = start_broker("--publish-token", "t")
    assert broker.request("POST", "/publish?key=raised&op=add", b"5", AUTH)[0] == 200
    with XhrPollingClient(broker.url, query="positions=1") as viewer, RawWebSocketClient(broker.url) as raw:
        viewer.collect(2)  # its start, the counter
        raw.receive()
        status, answer = broker.request("POST", path, body.encode(), headers)
        assert status == 422, (status, answer)
        assert "the broker's own" in answer["error"] and '"counter"' in answer["error"], answer
        assert broker.request("POST", "/publish", b"after", AUTH)[0] == 200
        assert viewer.collect(1) == [{"o": "2", "d": "after"}]
        assert raw.receive() == ["after"]
    assert broker.stats()["messages_in"] == 2
    assert broker.stats()["counters"] == {"raised": "5"}


def test_what_only_nests_the_broker_shapes_is_published(start_broker):
    broker = start_broker("--publish-token", "t")
    with WebSocketClient(broker.url) as viewer:
        for body in ({"data": {"counter": "raised", "value": "1"}}, [{"audience": 1}], {"Counter": "x"},
                     '{"counter": 1', '{"total": 1}'):
            text, headers = (body, AUTH) if isinstance(body, str) else (json.dumps(body), JSON)
            assert broker.request("POST", "/publish", text.encode(), headers)[0] == 200, body
            assert viewer.receive() == [body]
        assert broker.request("POST", "/publish", b'{"total": 1, "counter": "x"}', JSON)[0] == 422


@pytest.mark.parametrize("client_class", [RawWebSocketClient, WebSocketClient, XhrStreamingClient],
                         ids=lambda cls: cls.transport)
def test_a_client_cannot_send_in_the_broker_shape(start_broker, client_class):
    broker = start_broker("--publish-token", "t")
    with RawWebSocketClient(broker.url) as raw, client_class(broker.url) as offender:
        offender.send(json.dumps(FORGED_TOTAL))
        with pytest.raises(Closed) as closed:
            offender.collect(1)
        assert (closed.value.code, closed.value.reason) == (1007, "A message in the broker's own shape")
        with WebSocketClient(broker.url) as chat:
            chat.send('{"total": 1}', "after")
            assert chat.collect(2) == ['{"total": 1}', "after"], "JSON in another shape stays a chat line"
        assert raw.receive() == ['{"total": 1}'] and raw.receive() == ["after"]
    assert broker.stats()["messages_in"] == 2
