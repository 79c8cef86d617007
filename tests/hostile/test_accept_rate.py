"""--max-accept-rate: new sessions arrive at most that fast. Over it, /info and
every request that would open a session (a websocket's handshake included)
get 503 with Retry-After before any work, counted; sessions that exist go on,
and the clients already connected keep their round trip through a burst. (The
refill itself is tested without sockets or clocks in tests/unit/broker/core/test_limits.py.)"""

import time

from probes import UPGRADE, Canary, get, opening_requests, path_of, retry_after
from sockjs_clients import XhrPollingClient

RATE = 20


def test_over_the_rate_new_sessions_get_503_and_existing_ones_go_on(start_broker):
    # One session per 100 s, in bursts of one: the first takes the only token,
    # and the test is over long before the next, however slow the machine.
    broker = start_broker("--max-accept-rate", "0.01")
    polling = XhrPollingClient(broker.url).open()
    status, headers, body = get(broker, path_of(broker, broker.url) + "/info")
    assert (status, body) == (503, "Too many new sessions: retry later\n")
    assert 50 <= retry_after(headers) <= 100
    for name, path, headers in opening_requests(broker):
        status, answer_headers, _ = get(broker, path, headers=headers)
        assert status == 503 and retry_after(answer_headers) >= 50, name
    # What exists is not a new session: its requests pass.
    polling.send("still polling")
    assert polling.collect(1) == ["still polling"]
    refused = broker.stats()["refused"]["accept_rate"]
    assert refused == 1 + len(opening_requests(broker))
    metrics = broker.request("GET", "/metrics")[1]
    assert 'sockjs_broker_refused_connections_total{reason="accept_rate"} %d.0' % refused in metrics
    # Counted, not logged: a storm of refusals writes no line each.
    assert "503 " not in broker.server.output, broker.server.output[-2000:]


def test_a_burst_of_handshakes_is_held_to_the_rate_and_connected_clients_keep_their_round_trip(start_broker):
    broker = start_broker("--max-accept-rate", str(RATE))
    upgrade = path_of(broker, broker.url) + "/websocket"
    with Canary(broker) as canary:
        started = time.monotonic()
        answers = []
        for i in range(300):
            answers.append(get(broker, upgrade, headers=UPGRADE)[0])
            if i % 25 == 0:
                canary.round_trip()
        elapsed = time.monotonic() - started
    admitted = answers.count(101)
    assert set(answers) == {101, 503}
    assert admitted <= RATE + RATE * elapsed + 1, "%d admitted in %.2f s" % (admitted, elapsed)
    assert answers.count(503) == broker.stats()["refused"]["accept_rate"]
