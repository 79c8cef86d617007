"""--max-accept-rate: new sessions arrive at most that fast. Over it, /info and
every request that would open a session (a websocket's handshake included)
get 503 with Retry-After before any work, counted; sessions that exist go on,
and the clients already connected keep their round trip through a burst."""

import time

import pytest

from probes import Canary, get
from sockjs_clients import JsonpClient, WebSocketClient, XhrPollingClient, session_url, wait_until

RATE = 20
UPGRADE = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
           "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="}


@pytest.fixture
def broker(start_broker):
    return start_broker("--max-accept-rate", str(RATE))


def path_of(broker, url):
    return url[len(broker.origin):]


def retry_after(headers):
    (value,) = [line.split(":", 1)[1].strip() for line in headers.split("\r\n")
                if line.lower().startswith("retry-after:")]
    return int(value)


def opening_requests(broker):
    """A request that would open a new session, on each transport: (name, path, headers)."""
    prefix = path_of(broker, broker.url)
    session = path_of(broker, session_url(broker.url))
    return [("raw websocket", prefix + "/websocket", UPGRADE),
            ("websocket", session + "/websocket", UPGRADE),
            ("eventsource", session + "/eventsource", {}),
            ("htmlfile", session + "/htmlfile?c=cb", {}),
            ("jsonp", session + "/jsonp?c=cb", {})]


def test_over_the_rate_new_sessions_get_503_and_existing_ones_go_on(broker):
    polling = XhrPollingClient(broker.url).open()
    jsonp = JsonpClient(broker.url).open()
    # Empty the bucket (the two sessions above took two tokens).
    for _ in range(RATE):
        if get(broker, path_of(broker, broker.url) + "/websocket", headers=UPGRADE)[0] == 503:
            break
    status, headers, body = get(broker, path_of(broker, broker.url) + "/info")
    assert (status, retry_after(headers), body) == (503, 1, "Too many new sessions: retry later\n")
    for name, path, headers in opening_requests(broker):
        status, answer_headers, _ = get(broker, path, headers=headers)
        assert status == 503 and retry_after(answer_headers) == 1, name
    # What exists is not a new session: its requests pass.
    polling.send("still polling")
    assert polling.collect(1) == ["still polling"]
    jsonp.send("still jsonp")
    assert jsonp.collect(2) == ["still polling", "still jsonp"]
    refused = broker.stats()["refused"]["accept_rate"]
    assert refused >= 1 + len(opening_requests(broker))
    metrics = broker.request("GET", "/metrics")[1]
    assert 'sockjs_broker_refused_connections_total{reason="accept_rate"} %d.0' % refused in metrics
    # Tokens come back at the rate.
    wait_until(lambda: get(broker, path_of(broker, broker.url) + "/info")[0] == 200, timeout=2)
    with WebSocketClient(broker.url) as late:
        late.send("let in")
        assert late.collect(1) == ["let in"]


def test_a_burst_of_handshakes_is_held_to_the_rate_and_connected_clients_keep_their_round_trip(broker):
    upgrade = path_of(broker, broker.url) + "/websocket"
    with Canary(broker) as canary:
        started = time.monotonic()
        answers = []
        for i in range(300):
            answers.append(get(broker, upgrade, headers=UPGRADE)[0])
            if i % 25 == 0:
                canary.round_trip(limit=0.5)
        elapsed = time.monotonic() - started
    admitted = answers.count(101)
    assert set(answers) == {101, 503}
    assert admitted <= RATE + RATE * elapsed + 1, "%d admitted in %.2f s" % (admitted, elapsed)
    assert answers.count(503) == broker.stats()["refused"]["accept_rate"]
