"""deploy/nginx.conf, run by Debian's nginx in front of brokers run by the systemd unit.

The haproxy tests that hold for any proxy in front run here through nginx as well (imported,
with ``start_cluster`` starting nginx); the rest is what nginx does its own way: TLS, its
rate limit, its timeouts, the streams it passes unbuffered."""

import contextlib
import http.client
import re
import subprocess
import urllib.parse
import urllib.request

import pytest

import deployment
from deployment import start_cluster_behind_nginx  # noqa: F401  (start_cluster, with nginx in front)
from broker.config import DEFAULTS
from sockjs_clients import ALL, STREAMING
from test_haproxy import connected_from
from test_haproxy import test_a_mixed_audience_under_load_keeps_every_session_on_its_broker as \
    test_a_mixed_audience_under_load_through_nginx_keeps_every_session_on_its_broker  # noqa: F401
from test_haproxy import test_backends_publish_on_their_own_side_and_only_there as \
    test_backends_publish_through_nginx_on_their_own_side_and_only_there  # noqa: F401
from test_haproxy import test_every_request_of_a_session_reaches_the_broker_holding_it as \
    test_every_request_of_a_session_through_nginx_reaches_the_broker_holding_it  # noqa: F401
from test_haproxy import test_operators_endpoints_are_not_served_through_the_proxy as \
    test_operators_endpoints_are_not_served_through_nginx  # noqa: F401
from test_haproxy import test_server_ids_spread_sessions_over_the_brokers_and_each_stays_put as \
    test_server_ids_spread_sessions_over_the_brokers_behind_nginx_and_each_stays_put  # noqa: F401
from test_haproxy import test_the_brokers_count_clients_by_the_address_haproxy_saw as \
    test_the_brokers_count_clients_by_the_address_nginx_saw  # noqa: F401
from test_haproxy import test_websockets_go_through_and_spread as \
    test_websockets_go_through_nginx_and_spread  # noqa: F401


def shipped_settings(name):
    """The values of every ``name`` directive of the shipped config."""
    with open(deployment.NGINX_CONFIG) as f:
        return re.findall(r"^\s*%s\s+([^;]+);" % re.escape(name), f.read(), re.MULTILINE)


def seconds(value):
    return int(value.rstrip("s"))


def test_a_poll_a_stream_and_a_websocket_outlast_the_silence_between_two_heartbeats():
    """Waiting out nginx's minute would take a minute: its read and send timeouts must exceed,
    with room, the broker's heartbeat (a poll is answered, a stream and a websocket written to,
    at least that often)."""
    for name in ("proxy_read_timeout", "proxy_send_timeout", "send_timeout"):
        (value,) = shipped_settings(name)
        assert seconds(value) >= 2 * DEFAULTS.heartbeat_delay, (name, value)
    assert shipped_settings("proxy_buffering") == ["off"]
    assert shipped_settings("gzip") == ["off"]
    assert shipped_settings("proxy_http_version") == ["1.1"]


@pytest.mark.parametrize("client_class", STREAMING, ids=lambda c: c.transport)
def test_a_stream_passes_each_frame_as_the_broker_writes_it(start_cluster, client_class):
    """Each frame reaches the client while its response goes on: none waits for a buffer to fill."""
    cluster = start_cluster(1, "--publish-token", "t")
    with client_class(cluster.url, timeout=5) as stream:
        for n in range(3):
            assert cluster.backend_side.request("POST", "/publish", b"frame %d" % n,
                                                {"Authorization": "Bearer t"})[0] == 200
            assert stream.receive() == ["frame %d" % n]


def test_tls_at_nginx_serves_every_transport_and_redirects_plain_http(start_cluster, tls_files):
    """The shipped config with its TLS lines on, the brokers plain behind it."""
    cluster = start_cluster(1, "--publish-token", "t", tls=tls_files)
    proxy = cluster.proxy
    plain = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=5)
    plain.request("GET", "/broadcast/info")
    redirect = plain.getresponse()
    assert redirect.status == 301
    assert redirect.getheader("Location") == "https://127.0.0.1:%d/broadcast/info" % proxy.tls_port
    plain.close()
    secure = proxy.tls_origin + "/broadcast"
    with contextlib.ExitStack() as stack:
        clients = [stack.enter_context(cls(secure, tls=tls_files.client_context())) for cls in ALL]
        assert cluster.backend_side.request("POST", "/publish", b"through TLS", {"Authorization": "Bearer t"})[0] == 200
        for client in clients:
            assert client.receive() == ["through TLS"], client.transport
    checked = subprocess.run([deployment.NGINX, "-t", "-p", proxy.directory, "-c", proxy.config],
                             capture_output=True, text=True, timeout=30)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_an_address_over_its_burst_and_rate_is_answered_429(start_cluster):
    """1,000 requests at once, then 100 a second: past that, 429 before any broker sees them.
    (Unlike haproxy, nginx refuses /stats before it counts a request: these go to a broker.)"""
    cluster = start_cluster(1)
    port = cluster.proxy.port

    def status(source):
        with connected_from(source, port) as sock:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: broker\r\nConnection: close\r\n\r\n")
            return int(sock.recv(64).split(b" ", 2)[1])

    statuses = []
    while 429 not in statuses and len(statuses) < 20000:
        statuses.append(status("127.0.0.9"))
    assert 429 in statuses, "20,000 requests and no 429"
    assert statuses.index(429) >= 1000 and set(statuses[:statuses.index(429)]) == {200}
    assert status("127.0.0.10") == 200, "another address has its own count"


def test_nginx_starts_again_on_fresh_ports_when_one_is_taken_before_it_binds(start_broker, tmp_path,
                                                                               port_taken_first):
    deployment.require_nginx()
    broker = start_broker()
    taken = port_taken_first(deployment)
    proxy = deployment.Nginx([urllib.parse.urlsplit(broker.url).port], str(tmp_path))
    deployment.assert_started_on_fresh_ports(proxy, taken)
