"""GET /metrics from real brokers, read back with prometheus-client's own parser."""

import platform

import websocket
from prometheus_client.parser import text_string_to_metric_families

from sockjs_clients import Closed, WebSocketClient, XhrPollingClient, wait_until


AUTH = {"Authorization": "Bearer s3cret"}


def scrape(broker):
    """``{(sample name, labels as a sorted tuple): value}`` of one scrape; None if refused."""
    status, text = broker.request("GET", "/metrics")
    if status != 200:
        return None
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def value(samples, name, **labels):
    return samples.get((name, tuple(sorted(labels.items()))))


def test_figures_move_as_clients_connect_and_messages_flow(broker):
    before = scrape(broker)
    assert value(before, "sockjs_broker_messages_in_total") == 0
    assert value(before, "sockjs_broker_delivery_latency_seconds_count") == 0
    assert value(before, "sockjs_broker_disconnects_total", reason="slow_consumer") == 0
    assert value(before, "process_resident_memory_bytes") > 0
    assert value(before, "sockjs_broker_connections_behind") == 0
    assert value(before, "sockjs_broker_unsent_bytes") == 0
    assert value(before, "python_info", implementation=platform.python_implementation(),
                 major=platform.python_version_tuple()[0], minor=platform.python_version_tuple()[1],
                 patchlevel=platform.python_version_tuple()[2],
                 version=platform.python_version()) == 1
    with WebSocketClient(broker.url) as a, WebSocketClient(broker.url) as b, XhrPollingClient(broker.url) as c:
        connected = scrape(broker)
        assert value(connected, "sockjs_broker_connections", transport="websocket") == 2
        assert value(connected, "sockjs_broker_connections", transport="xhr") == 1
        assert value(connected, "sockjs_broker_sessions") == 3
        assert value(connected, "sockjs_broker_tcp_connections") >= 3
        a.send("one", "two")
        assert broker.request("POST", "/publish", b"three", AUTH)[0] == 200
        for client in (a, b, c):
            client.collect(3)
        flowed = wait_until(lambda: (lambda s: s if value(s, "sockjs_broker_messages_out_total") == 9
                                     else None)(scrape(broker)))
    assert value(flowed, "sockjs_broker_messages_in_total") == 3
    assert 1 <= value(flowed, "sockjs_broker_flushes_total") <= 2
    assert value(flowed, "sockjs_broker_delivery_latency_seconds_count") == 3
    assert value(flowed, "sockjs_broker_delivery_latency_seconds_bucket", le="+Inf") == 3
    assert 0 < value(flowed, "sockjs_broker_delivery_latency_seconds_sum") < 3 * 0.5
    # A polling session lives on until it expires; the websockets leave at once.
    wait_until(lambda: value(scrape(broker), "sockjs_broker_connections", transport="websocket") == 0)


def test_cuts_and_refusals_are_counted(start_broker):
    broker = start_broker("--client-rate", "1", "--max-connections", "2")
    with WebSocketClient(broker.url) as flooder:
        # One frame: the third of its messages is over the bucket, and no
        # later send can meet the socket the broker has cut.
        flooder.send(*map(str, range(5)))
        try:
            while True:
                flooder.receive()
        except Closed as closed:
            assert closed.code == 3009
    with WebSocketClient(broker.url), WebSocketClient(broker.url):
        try:
            refused = websocket.create_connection("ws" + broker.url[4:] + "/websocket", timeout=5)
        except websocket.WebSocketBadStatusException as error:
            assert error.status_code == 503
        else:
            refused.close()
            raise AssertionError("a third connection was let in")
    samples = wait_until(lambda: scrape(broker))
    assert value(samples, "sockjs_broker_disconnects_total", reason="rate_limited") == 1
    assert value(samples, "sockjs_broker_refused_connections_total", reason="max_connections") >= 1
    assert value(samples, "sockjs_broker_tcp_connections_limit") == 2


def test_pypy_shows_its_collections_and_cpython_does_not(broker):
    names = {name for name, _ in scrape(broker)}
    on_pypy = platform.python_implementation() == "PyPy"
    assert ("sockjs_broker_gc_major_started_total" in names) == on_pypy
    assert not any(name.startswith("sockjs_broker_backplane_") for name in names)


def test_openmetrics_is_served_to_a_scraper_that_asks_for_it(broker):
    import urllib.request
    request = urllib.request.Request(broker.origin + "/metrics",
                                     headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.headers["Content-Type"].startswith("application/openmetrics-text")
        assert response.read().rstrip().endswith(b"# EOF")


def test_the_history_and_how_positioned_connections_started_are_counted(start_broker):
    broker = start_broker("--publish-token", "s3cret", "--history", "2")
    for n in range(3):
        broker.request("POST", "/publish", str(n).encode(), AUTH)
    with WebSocketClient(broker.url, query="positions=1") as fresh:
        epoch = fresh.receive()[0]["epoch"]
    with WebSocketClient(broker.url, query="positions=1&epoch=%s&since=1" % epoch) as resumed:
        resumed.collect(2)
    with WebSocketClient(broker.url, query="positions=1&epoch=old&since=1") as lost:
        lost.receive()
    samples = scrape(broker)
    assert value(samples, "sockjs_broker_history_messages") == 2
    assert value(samples, "sockjs_broker_history_forgotten_total") == 1
    assert [value(samples, "sockjs_broker_position_starts_total", outcome=o)
            for o in ("open", "resumed", "epoch", "expired", "unknown")] == [1, 1, 1, 0, 0]
