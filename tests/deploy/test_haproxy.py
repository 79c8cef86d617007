"""deploy/haproxy.cfg, run by Debian's haproxy in front of brokers run by the systemd unit."""

import concurrent.futures
import contextlib
import http.client
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest
import websocket

import deployment
import result_lines
from broker.protocol.close_codes import RECONNECT
from checkout import ROOT
from loadtest.contenders import haproxy
from sockjs_clients import (ALL, Closed, EventSourceClient, HtmlFileClient, JsonpClient, RawWebSocketClient,
                            WebSocketClient, XhrPollingClient, XhrStreamingClient, closed_with, wait_until)

# Every transport at once, through one proxy: sockjs-client's order of preference, weighted.
MIX = "websocket=40,xhr-streaming=20,eventsource=10,htmlfile=10,xhr-polling=10,jsonp-polling=10"
MIXED_CLIENTS = 60
SESSION_TRANSPORTS = [XhrPollingClient, XhrStreamingClient, EventSourceClient, JsonpClient, HtmlFileClient]
ROUNDS = 4


# Alone: haproxy marks a broker that answers no check within its 1 s "timeout check" twice down,
# which the side-by-side tier's load made both fresh brokers do once (503, no server available).
@pytest.mark.alone
@pytest.mark.parametrize("client_class", SESSION_TRANSPORTS, ids=lambda c: c.transport)
def test_every_request_of_a_session_reaches_the_broker_holding_it(start_cluster, client_class):
    cluster = start_cluster(2)
    with client_class(cluster.url) as client:
        for n in range(ROUNDS):
            # Each send and, for polling, each receive is a request of its own.
            client.send("line %d" % n)
            assert client.receive() == ["line %d" % n]
        sessions = cluster.sessions()
        messages_in = [broker.stats()["messages_in"] for broker in cluster.brokers]
    assert sorted(sessions) == [0, 1], sessions
    holder = sessions.index(1)
    assert messages_in[holder] == ROUNDS and messages_in[1 - holder] == 0, messages_in


def test_server_ids_spread_sessions_over_the_brokers_and_each_stays_put(start_cluster):
    cluster = start_cluster(2, "--publish-token", "t")
    clients = [XhrPollingClient(cluster.url, server_id="%03d" % n).open() for n in range(20)]
    for client in clients:
        client.send(client.url)
    for n, broker in enumerate(cluster.brokers):
        broker.request("POST", "/publish", b"end %d" % n, {"Authorization": "Bearer t"})
    held_by = {}
    heard = {}
    for client in clients:
        messages = []
        while not messages or not messages[-1].startswith("end "):
            messages += client.receive()
        held_by[client.url] = int(messages[-1].split()[1])
        heard[client.url] = set(messages[:-1])
    for url, holder in held_by.items():
        assert heard[url] == {other for other, h in held_by.items() if h == holder}
    sessions = cluster.sessions()
    assert sessions == [list(held_by.values()).count(n) for n in range(2)] and min(sessions) > 0, sessions


def test_websockets_go_through_and_spread(start_cluster):
    cluster = start_cluster(2)
    clients = [WebSocketClient(cluster.url).open() for _ in range(4)] + [
        RawWebSocketClient(cluster.url) for _ in range(2)]
    try:
        for n, client in enumerate(clients):
            client.send("hello %d" % n)
            heard = []
            while "hello %d" % n not in heard:  # after the lines of others on its broker
                heard += client.receive()
        connections = [broker.stats()["connections"] for broker in cluster.brokers]
        assert all(c.get("websocket", 0) + c.get("rawwebsocket", 0) >= 2 for c in connections), connections
    finally:
        for client in clients:
            client.close()


def test_operators_endpoints_are_not_served_through_the_proxy(start_cluster):
    cluster = start_cluster(1)
    assert cluster.request("GET", "/metrics")[0] == 403
    assert cluster.request("GET", "/stats")[0] == 403
    assert cluster.request("POST", "/admin/drain", b"")[0] == 403
    assert cluster.request("GET", "/healthz")[0] == 200


def test_backends_publish_on_their_own_side_and_only_there(start_cluster):
    cluster = start_cluster(1, "--publish-token", "t")
    token = {"Authorization": "Bearer t"}
    with WebSocketClient(cluster.url) as client:
        assert cluster.request("POST", "/publish", b"from the internet", token)[0] == 403
        assert cluster.backend_side.request("POST", "/publish", b"from a backend", token)[0] == 200
        assert client.receive() == ["from a backend"]
    assert cluster.backend_side.request("GET", "/broadcast/info")[0] == 403
    assert cluster.backend_side.request("POST", "/admin/drain", b"", token)[0] == 403


def test_tls_at_haproxy_serves_every_transport_and_redirects_plain_http(start_cluster, tls_files):
    """The shipped config with its TLS lines on, the brokers plain behind it."""
    cluster = start_cluster(1, "--publish-token", "t", tls_pem=tls_files.combined)
    proxy = cluster.proxy
    plain = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    plain.request("GET", "/broadcast/info")
    redirect = plain.getresponse()
    assert redirect.status == 301
    assert redirect.getheader("Location") == "https://127.0.0.1:%d/broadcast/info" % proxy.port
    plain.close()
    context = tls_files.client_context()
    secure = proxy.tls_origin + "/broadcast"
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(cls(secure, tls=context)) for cls in ALL]
        assert cluster.backend_side.request("POST", "/publish", b"through TLS", {"Authorization": "Bearer t"})[0] == 200
        for client in clients:
            assert client.receive() == ["through TLS"], client.transport
    checked = subprocess.run([deployment.HAPROXY, "-c", "-f", proxy.config], capture_output=True, text=True,
                             timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def connected_from(source, port):
    return socket.create_connection(("127.0.0.1", port), timeout=5, source_address=(source, 0))


def test_the_brokers_count_clients_by_the_address_haproxy_saw(start_cluster):
    """A client cannot pass for another by sending its own X-Forwarded-For."""
    cluster = start_cluster(1, "--max-connections-per-ip", "1")
    port = cluster.proxy.port
    first = WebSocketClient(cluster.url, socket=connected_from("127.0.0.2", port),
                            header=["X-Forwarded-For: 127.0.0.7"]).open()
    with pytest.raises(websocket.WebSocketBadStatusException) as refused:
        WebSocketClient(cluster.url, socket=connected_from("127.0.0.2", port),
                        header=["X-Forwarded-For: 127.0.0.8"])
    assert refused.value.status_code == 503
    other = WebSocketClient(cluster.url, socket=connected_from("127.0.0.3", port)).open()
    first.close()
    other.close()


def placed(cluster, open_client):
    """``(client, the index of the broker that holds its session)`` for the client ``open_client()`` opens."""
    before = cluster.sessions()
    client = open_client()
    return client, [a - b for a, b in zip(cluster.sessions(), before)].index(1)


def placed_sessions(cluster, count, timeout=5.0):
    """``count`` polling sessions opened through haproxy, with the server ids "000",
    "001", ...: ``{client: the index of the broker that holds its session}``."""
    return dict(placed(cluster, lambda: XhrPollingClient(cluster.url, timeout=timeout, server_id="%03d" % n).open())
                for n in range(count))


def states(cluster, n):
    """``{backend: state}`` of broker ``n`` in haproxy."""
    name = "broker%d" % cluster.proxy.broker_ports[n]
    return {backend: state for (backend, server), state in cluster.proxy.server_states().items() if server == name}


def test_a_broker_failing_its_health_check_is_taken_out(start_cluster):
    cluster = start_cluster(2)
    placed = placed_sessions(cluster, 20)
    hung = cluster.brokers[1].server.process
    hung.send_signal(signal.SIGSTOP)  # it accepts connections and answers nothing
    try:
        wait_until(lambda: "UP" not in states(cluster, 1).values(), timeout=15)
        moved = [client.url.split("/")[-2] for client, holder in placed.items() if holder == 1]
        assert moved
        for server_id in moved:
            with XhrPollingClient(cluster.url, server_id=server_id) as client:
                client.send("moved")
                assert client.receive() == ["moved"]
    finally:
        hung.send_signal(signal.SIGCONT)


# A broker that stops answering is marked down, and its connections shut, 2.5 to 3.5 s after it
# stops (docs/deployment.rst, "Health checks and their timings"): a page's first reconnect waits
# up to 0.5 s more (broker-client.js), within 5 s of the stop with a second to spare here.
HUNG_CUT_S = 4.5


def on_broker(cluster, n, open_client, most=30):
    """A client opened by ``open_client(server_id)`` whose session broker ``n`` holds, by server ids "000", ...;
    the clients that landed elsewhere are closed."""
    for server_id in range(most):
        client, holder = placed(cluster, lambda: open_client("%03d" % server_id))
        if holder == n:
            return client
        client.close()
    raise AssertionError("no session of %d landed on broker %d" % (most, n))


def first_event(client):
    """``(when, what)``: the monotonic time and the first thing ``client`` reads, a frame or its end."""
    try:
        frame = client.read_frame()
    except (Closed, OSError, http.client.HTTPException, websocket.WebSocketException) as error:
        return time.monotonic(), type(error).__name__
    return time.monotonic(), frame


@pytest.mark.alone  # its bound is a second above haproxy's: no other test's load beside it
def test_a_hung_broker_is_taken_out_and_its_connections_shut_within_the_bound(start_cluster):
    """SIGSTOP: a hung process, a blocked event loop, a paused VM. It still accepts connections
    (the kernel does) and answers nothing, so nothing ends its clients' connections but haproxy,
    whose checks find it silent: its websocket and its stream are cut, and its pending poll is
    sent to another broker, which answers with a new session (sockjs-client then reconnects),
    each within the bound of the stop. A broker that drains is not cut so (below)."""
    cluster = start_cluster(3)
    slow = HUNG_CUT_S + 3  # a client that is never cut reads no longer
    websocket_client, hung = placed(cluster, lambda: WebSocketClient(cluster.url, timeout=slow).open())
    stream = on_broker(cluster, hung, lambda server_id: XhrStreamingClient(cluster.url, slow, server_id).open())
    poll = on_broker(cluster, hung, lambda server_id: XhrPollingClient(cluster.url, slow, server_id).open())
    process = cluster.brokers[hung].server.process
    with concurrent.futures.ThreadPoolExecutor(3) as pool:
        try:
            events = [pool.submit(first_event, client) for client in (websocket_client, stream, poll)]
            wait_until(lambda: cluster.brokers[hung].stats()["connections"].get("xhr") == 1)  # the poll waits there
            stopped = time.monotonic()
            process.send_signal(signal.SIGSTOP)
            cuts = {client.transport: (event.result()[0] - stopped, event.result()[1])
                    for client, event in zip((websocket_client, stream, poll), events)}
            out = states(cluster, hung)
        finally:
            process.send_signal(signal.SIGCONT)
    assert {transport: what for transport, (_, what) in cuts.items()} == {
        "websocket": "Closed", "xhr_streaming": "Closed", "xhr": "o"}, cuts
    assert all(seconds < HUNG_CUT_S for seconds, _ in cuts.values()), cuts
    assert set(out.values()) == {"DOWN"}, out
    websocket_client.close()
    stream.close()
    poll.close()


def closed_after(client, began):
    """``(seconds after began, close code)`` of the end of ``client``'s session."""
    code, _ = closed_with(client)
    return time.monotonic() - began, code


def test_a_draining_broker_closes_its_websockets_and_streams_itself_spread_over_its_drain(start_cluster):
    """Its checks say "draining": haproxy sends it no new websocket, but a broker that drains
    is not marked down, so haproxy cuts none of its connections (it cuts those of a hung one,
    above): each is closed by the drain, with 3012, spread over --drain-seconds, and its
    client reconnects elsewhere at its own time, not all at once."""
    drain_seconds = 6
    cluster = start_cluster(2, "--drain-seconds", str(drain_seconds), "--heartbeat-delay", "1")
    # The drain closes its clients in the order they came: the websockets last, after haproxy's checks.
    clients = [placed(cluster, lambda: XhrStreamingClient(cluster.url, 10, "%03d" % n).open()) for n in range(8)]
    clients += [placed(cluster, lambda: WebSocketClient(cluster.url, timeout=10).open()) for _ in range(8)]
    draining = [client for client, holder in clients if holder == 0]
    assert {client.transport for client in draining} == {"websocket", "xhr_streaming"}, clients
    began = time.monotonic()
    cluster.brokers[0].server.process.send_signal(signal.SIGTERM)
    with concurrent.futures.ThreadPoolExecutor(len(draining)) as pool:
        ends = sorted(pool.map(lambda client: closed_after(client, began), draining))
    assert {code for _, code in ends} == {RECONNECT[0]}, ends
    # Closed at ceil(clients * t / drain_seconds), they leave over (clients - 1) / clients of it;
    # cut at once, within a fraction of a second.
    assert ends[-1][0] - ends[0][0] >= drain_seconds / 3, ends
    for client, _ in clients:
        client.close()


def test_a_broker_whose_redis_is_away_is_taken_out_of_both_backends(start_redis, start_cluster):
    """Its 503 says "unavailable", not "draining": its sessions would hear nothing the
    other brokers publish, so haproxy sends new ones elsewhere."""
    redis = start_redis()
    cluster = start_cluster(1, "--redis", redis.url)
    redis.stop()
    wait_until(lambda: "UP" not in states(cluster, 0).values(), timeout=15)


def polled_until_its_session_ends(client, most=100):
    """The frame that ends ``client``'s polling session: its close frame, or the
    open frame of a new session that a poll opened elsewhere."""
    for _ in range(most):
        frame = client.read_frame()
        if frame[:1] in ("c", "o"):
            return frame
    raise AssertionError("%d polls and the session goes on" % most)


def test_a_draining_broker_gets_the_polls_of_its_sessions_until_it_has_closed_them(start_cluster):
    """A draining broker is out of the brokers backend's balancing at its first check (no
    new websocket goes to it) but not out of the sessions backend's: each of its polling
    sessions ends as its drain closes it, with 3012, spread over the drain; not all at
    once as haproxy takes it out, a poll sent to the other broker opening a new session
    there."""
    cluster = start_cluster(2, "--drain-seconds", "8", "--heartbeat-delay", "1")
    draining = [client for client, holder in placed_sessions(cluster, 20, timeout=15).items() if holder == 0]
    assert draining
    process = cluster.brokers[0].server.process
    process.send_signal(signal.SIGTERM)
    with concurrent.futures.ThreadPoolExecutor(len(draining)) as pool:
        ends = pool.map(polled_until_its_session_ends, draining)
        wait_until(lambda: states(cluster, 0)["brokers"] != "UP", timeout=10)
        assert states(cluster, 0)["sessions"] == "UP"
        ends = list(ends)
    assert ends == ['c[3012,"Server draining: reconnect"]'] * len(draining)
    assert process.wait(10) == 0


def test_a_session_that_would_open_on_a_draining_broker_opens_on_the_other_unseen(start_cluster):
    """A draining broker stays in the sessions backend (it holds its sessions until its drain has
    closed them), so the first request of a new session whose server id hashes to it still
    reaches it. It answers 503 before making anything of the session, and haproxy asks the
    other broker (retry-on 503): the client sees its session open there, not a 3012. So does a
    websocket that reaches it before the checks take it out of the brokers backend."""
    cluster = start_cluster(2, "--drain-seconds", "30", "--heartbeat-delay", "1")
    ids = [client.url.split("/")[-2] for client, holder in placed_sessions(cluster, 12).items() if holder == 0]
    assert ids
    draining = cluster.brokers[0]
    draining.server.process.send_signal(signal.SIGTERM)
    wait_until(lambda: draining.stats()["drain"]["draining"])
    opened = [XhrStreamingClient(cluster.url, server_id=server_id).open() for server_id in ids]
    opened += [WebSocketClient(cluster.url).open() for _ in range(4)]
    # Alive, with a heartbeat a second: a session opened on the draining broker would be closed at once.
    assert [client.read_frame() for client in opened] == ["h"] * len(opened)
    assert draining.stats()["drain"]["refused"] >= len(ids)
    for client in opened:
        client.close()


def test_an_address_over_the_request_rate_is_answered_429(start_cluster):
    cluster = start_cluster(1)
    port = cluster.proxy.port

    def status(source):
        # /stats is refused by haproxy itself (403), so the burst costs the broker nothing.
        with connected_from(source, port) as sock:
            sock.sendall(b"GET /stats HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n")
            return int(sock.recv(64).split(b" ", 2)[1])

    statuses = [status("127.0.0.9") for _ in range(1001)]
    assert statuses[:1000] == [403] * 1000
    assert statuses[1000] == 429
    assert status("127.0.0.10") == 403, "another address has its own count"


def test_haproxy_starts_again_on_fresh_ports_when_one_is_taken_before_it_binds(start_broker, tmp_path,
                                                                                 port_taken_first):
    deployment.require_haproxy()
    broker = start_broker()
    taken = port_taken_first(haproxy)
    proxy = haproxy.HAProxy([urllib.parse.urlsplit(broker.url).port], str(tmp_path), source=deployment.HAPROXY_CONFIG)
    deployment.assert_started_on_fresh_ports(proxy, taken)


def test_haproxy_accepts_the_shipped_config_as_it_is():
    deployment.require_haproxy()
    done = subprocess.run([deployment.HAPROXY, "-c", "-f", os.path.join(deployment.DEPLOY, "haproxy.cfg")],
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_mixed_audience_under_load_keeps_every_session_on_its_broker(start_redis, start_cluster, tmp_path):
    """Three brokers sharing the room through Redis: a stream, poll or send that
    haproxy routed to another broker than its session's would be answered 404,
    and the load client would drop that client."""
    cluster = start_cluster(3, "--redis", start_redis().url, "--client-rate", "0")
    out = tmp_path / "run.jsonl"
    # Several source addresses: haproxy answers 429 to one over 1,000 requests in 10 s.
    completed = subprocess.run(
        [sys.executable, "-m", "loadtest", "--url", cluster.url, "--mix", MIX, "--clients", str(MIXED_CLIENTS),
         "--rate", "20", "--step-seconds", "5", "--pause", "0.5", "--source-addresses", "127.0.0.2-127.0.0.9",
         "--out", str(out)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert completed.returncode == 0, completed.stderr
    (step,) = [r for r in result_lines.read(out) if r["type"] == "step"]
    assert (step["lost"], step["dropped"]) == (0, 0), step
    assert step["received"] == step["sent"] * MIXED_CLIENTS
    delivered = [broker.stats()["messages_out"] for broker in cluster.brokers]
    assert all(delivered), "a broker held none of the sessions: %s" % delivered
