"""--max-connection-age: a connection that old is closed with 3012, on every transport,
never before its age less the jitter, and counted."""

import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from broker.core.connection_age import JITTER
from broker.protocol.close_codes import RECONNECT
from sockjs_clients import (Closed, EventSourceClient, RawWebSocketClient, WebSocketClient, XhrStreamingClient,
                            closed_with, wait_until)

AGE_S = 2.0


def test_old_connections_are_sent_elsewhere_and_counted(start_broker):
    broker = start_broker("--max-connection-age", "%g" % AGE_S)
    before = time.monotonic()
    clients = [WebSocketClient(broker.url, timeout=10).open(), XhrStreamingClient(broker.url, timeout=10).open(),
               EventSourceClient(broker.url, timeout=10).open()]
    raw = RawWebSocketClient(broker.url, timeout=10).open()
    for client in clients:
        assert closed_with(client) == RECONNECT, client.transport
    with pytest.raises(Closed) as closed:
        raw.read_frame()
    assert (closed.value.code, closed.value.reason) == RECONNECT
    assert time.monotonic() - before >= AGE_S * (1 - JITTER)
    wait_until(lambda: broker.stats()["max_connection_age"] == {"seconds": AGE_S, "connections": 0, "closed": 4})
    text = broker.request("GET", "/metrics")[1]
    (closes,) = [sample.value for family in text_string_to_metric_families(text) for sample in family.samples
                 if sample.name == "sockjs_broker_connection_age_closes_total"]
    assert closes == 4


def test_without_the_flag_nothing_is_aged(start_broker):
    broker = start_broker()
    assert "max_connection_age" not in broker.stats()
