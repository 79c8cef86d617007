"""--max-connections and --max-connections-per-ip: a connection over a limit is
answered 503 with a short body and closed at once, counted in /stats, and
everyone within the limits is still served. Polling and streaming sessions,
which hold no connection between requests, are counted against the same
limits on their own: one over them is closed as it opens."""

import json

import pytest
import websocket

from probes import Canary, closed, connect, get, open_fds
from sockjs_clients import Closed, WebSocketClient, XhrPollingClient, XhrStreamingClient, wait_until


NONE_REFUSED = {"max_connections": 0, "per_ip": 0, "max_sessions": 0, "sessions_per_ip": 0, "accept_rate": 0}


def stats_on(broker, monitor):
    """/stats over ``monitor``, a keep-alive connection opened before the attack."""
    status, _, body = get(broker, "/stats", sock=monitor)
    assert status == 200
    return json.loads(body)


def test_connections_over_the_limit_are_refused_with_503(start_broker):
    broker = start_broker("--max-connections", "20")
    baseline = open_fds(broker.server.pid)
    monitor = connect(broker)
    with Canary(broker) as canary:
        held = [connect(broker) for _ in range(18)]
        wait_until(lambda: stats_on(broker, monitor)["tcp_connections"] == 20)

        for _ in range(30):
            status, headers, body = get(broker, "/healthz")
            assert status == 503 and "connection limit" in body
            assert "Connection: close" in headers
        canary.round_trip()
        stats = stats_on(broker, monitor)
        assert stats["refused"] == dict(NONE_REFUSED, max_connections=30)
        assert stats["tcp_connections"] == 20
        assert open_fds(broker.server.pid) <= baseline + 20

        for sock in held[:5]:
            sock.close()
        wait_until(lambda: stats_on(broker, monitor)["tcp_connections"] == 15)
        assert get(broker, "/healthz")[0] == 200
        canary.round_trip()
        for sock in held[5:]:
            sock.close()
    monitor.close()


def test_one_address_gets_its_share_and_no_more(start_broker):
    broker = start_broker("--max-connections-per-ip", "5")
    monitor = connect(broker)
    with Canary(broker) as canary:
        held = [connect(broker, source="127.0.0.2") for _ in range(5)]
        wait_until(lambda: stats_on(broker, monitor)["tcp_connections"] == 2 + 5)
        baseline = open_fds(broker.server.pid)
        for _ in range(200):
            status, _, body = get(broker, "/healthz", source="127.0.0.2")
            assert status == 503 and "from your address" in body
        # A refusal holds its descriptor for one send; one may still be closing.
        wait_until(lambda: open_fds(broker.server.pid) <= baseline)
        assert get(broker, "/healthz", source="127.0.0.3")[0] == 200
        canary.round_trip()
        assert stats_on(broker, monitor)["refused"] == dict(NONE_REFUSED, per_ip=200)

        held.pop().close()
        wait_until(lambda: stats_on(broker, monitor)["tcp_connections"] == 2 + 4)
        assert get(broker, "/healthz", source="127.0.0.2")[0] == 200
        for sock in held:
            sock.close()
    monitor.close()


def test_behind_a_proxy_the_configured_header_names_the_client(start_broker):
    broker = start_broker("--max-connections-per-ip", "2", "--client-address-header", "X-Forwarded-For")
    proxy = [connect(broker) for _ in range(4)]

    def via(sock, chain):
        return get(broker, "/healthz", sock=sock, headers={"X-Forwarded-For": chain})

    # Only the last address counts: the one the proxy appended.
    assert via(proxy[0], "6.6.6.6, 10.0.0.1")[0] == 200
    assert via(proxy[1], "10.0.0.1")[0] == 200
    status, headers, body = via(proxy[2], "10.0.0.2, 10.0.0.1")
    assert status == 503 and "from your address" in body and "Connection: close" in headers
    wait_until(lambda: closed(proxy[2]))
    # A keep-alive connection belongs to the client of its latest request.
    assert via(proxy[3], "10.0.0.2")[0] == 200
    assert via(proxy[3], "10.0.0.1")[0] == 503
    wait_until(lambda: closed(proxy[3]))
    for sock in proxy:
        sock.close()
    # Websockets count the same way; the stats request is the one connection left.
    wait_until(lambda: broker.stats()["tcp_connections"] == 1)
    url = "ws" + broker.origin[4:] + "/broadcast/websocket"
    header = ["X-Forwarded-For: 10.0.0.1"]
    sockets = [websocket.create_connection(url, timeout=5, header=header) for _ in range(2)]
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        websocket.create_connection(url, timeout=5, header=header)
    assert refused.value.status_code == 503
    assert broker.stats()["refused"] == dict(NONE_REFUSED, per_ip=3)
    for sock in sockets:
        sock.close()


def test_only_a_trusted_proxy_may_name_the_client(start_broker):
    broker = start_broker("--max-connections-per-ip", "1", "--client-address-header", "X-Forwarded-For",
                          "--trusted-proxies", "127.0.0.2")
    # The proxy's requests count for the clients they name, one each.
    proxied = [connect(broker, "127.0.0.2") for _ in range(2)]
    assert get(broker, "/healthz", sock=proxied[0], headers={"X-Forwarded-For": "10.0.0.1"})[0] == 200
    assert get(broker, "/healthz", sock=proxied[1], headers={"X-Forwarded-For": "10.0.0.2"})[0] == 200
    # Any other peer is its own address, whatever it claims: its second connection is refused.
    direct = connect(broker, "127.0.0.3")
    assert get(broker, "/healthz", sock=direct, headers={"X-Forwarded-For": "10.0.0.3"})[0] == 200
    status, _, body = get(broker, "/healthz", source="127.0.0.3", headers={"X-Forwarded-For": "10.0.0.4"})
    assert status == 503 and "from your address" in body
    for sock in proxied + [direct]:
        sock.close()


def test_without_the_flag_the_header_is_not_trusted(start_broker):
    broker = start_broker("--max-connections-per-ip", "2")
    held = [connect(broker) for _ in range(2)]
    status, _, body = get(broker, "/healthz", headers={"X-Forwarded-For": "10.9.9.9"})
    assert status == 503 and "from your address" in body
    for sock in held:
        sock.close()


class PollsOnFreshConnections(XhrPollingClient):
    """Each poll on a connection of its own: these tests count sessions, apart
    from the connections a browser keeps alive between polls (counted as any)."""

    keep_alive = False


def refused_session(kind, url):
    """The close frame a new session of ``kind`` gets once it has opened: (code, reason)."""
    client = kind(url).open()
    with pytest.raises(Closed) as refused:
        client.receive()
    client.close()
    return refused.value.code, refused.value.reason


def test_one_address_gets_its_share_of_polling_sessions_and_no_more(start_broker):
    broker = start_broker("--max-connections-per-ip", "3", "--publish-token", "t")
    polling = [PollsOnFreshConnections(broker.url).open() for _ in range(3)]
    wait_until(lambda: broker.stats()["connections_total"] == 3)
    for kind in (PollsOnFreshConnections, XhrStreamingClient):
        assert refused_session(kind, broker.url) == (3010, "Too many sessions from your address")
    with WebSocketClient(broker.url) as websocket_client:  # a websocket is counted as its connection
        assert broker.request("POST", "/publish", b"to the admitted", {"Authorization": "Bearer t"})[0] == 200
        for client in polling + [websocket_client]:
            assert client.collect(1) == ["to the admitted"]
    stats = broker.stats()
    assert stats["connections_total"] == 3
    assert stats["refused"]["sessions_per_ip"] == 2
    # Abandoned sessions expire (5 s after their last poll), and their places are free again.
    wait_until(lambda: broker.stats()["connections_total"] == 0, timeout=15)
    polling = [PollsOnFreshConnections(broker.url).open() for _ in range(3)]
    wait_until(lambda: broker.stats()["connections_total"] == 3)
    assert refused_session(PollsOnFreshConnections, broker.url)[0] == 3010


def test_the_server_holds_at_most_max_connections_polling_sessions(start_broker):
    broker = start_broker("--max-connections", "4")
    polling = [PollsOnFreshConnections(broker.url).open() for _ in range(4)]
    wait_until(lambda: broker.stats()["connections_total"] == 4)
    assert refused_session(PollsOnFreshConnections, broker.url) == (3011, "The server is at its session limit")
    assert broker.stats()["refused"]["max_sessions"] == 1
    polling[0].send("still served")
    for client in polling:
        assert client.collect(1) == ["still served"]
