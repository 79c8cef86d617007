"""Connection accounting alone: admissions, refusals by reason, releases,
clients behind a proxy, what a client address is, and the default limit;
and the flags of the limits and timeouts."""

import pytest

from broker.config import parse_args
from broker.core.limits import Limits, TrustedProxies, client_key, default_max_connections


@pytest.mark.parametrize("address, client", [
    ("203.0.113.7", "203.0.113.7"),
    (" 203.0.113.7 ", "203.0.113.7"),
    ("::ffff:203.0.113.7", "203.0.113.7"),
    ("2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"),
    ("2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"),
    ("unknown", None),
    ("203.0.113.7:443", None),
    ("", None),
])
def test_a_client_is_an_ipv4_address_or_an_ipv6_64(address, client):
    assert client_key(address) == client


def test_the_total_limit_refuses_and_counts():
    limits = Limits(2)
    assert limits.admit("a") is None and limits.admit("b") is None
    assert limits.admit("c") == "max_connections"
    assert limits.stats() == {"tcp_connections": 2, "accept_pauses": 0, "refused": {
        "max_connections": 1, "per_ip": 0, "max_sessions": 0, "sessions_per_ip": 0, "accept_rate": 0}}
    limits.release("a")
    assert limits.admit("c") is None
    assert limits.per_client == {}, "nothing is kept per client without a per-client limit"


def test_the_per_client_limit_refuses_that_client_only():
    limits = Limits(100, max_per_client=2)
    assert limits.admit("a") is None and limits.admit("a") is None
    assert limits.admit("a") == "per_ip"
    assert limits.admit("b") is None
    assert limits.refused == {"max_connections": 0, "per_ip": 1, "max_sessions": 0, "sessions_per_ip": 0,
                              "accept_rate": 0}
    limits.release("a")
    assert limits.admit("a") is None
    for client in ("a", "a", "b"):
        limits.release(client)
    assert limits.open == 0 and limits.per_client == {}


def test_sessions_are_counted_apart_from_connections_against_the_same_limits():
    limits = Limits(3, max_per_client=2)
    assert limits.admit("a") is None
    assert limits.admit_session("a") is None and limits.admit_session("a") is None
    assert limits.admit_session("a") == "sessions_per_ip", "one connection, but two sessions already"
    assert limits.admit("a") is None, "connections are a count of their own"
    assert limits.admit_session("b") is None
    assert limits.admit_session(None) == "max_sessions"
    assert limits.refused == {"max_connections": 0, "per_ip": 0, "max_sessions": 1, "sessions_per_ip": 1,
                              "accept_rate": 0}
    limits.release_session("a")
    assert limits.admit_session("a") is None
    for client in ("a", "a", "b"):
        limits.release_session(client)
    assert limits.sessions == 0 and limits.sessions_per_client == {}
    assert limits.open == 2 and limits.per_client == {"a": 2}


def test_behind_a_proxy_a_connection_moves_to_the_client_its_request_names():
    limits = Limits(100, max_per_client=1)
    assert limits.admit(None) is None and limits.admit(None) is None
    assert limits.reassign(None, "a") is None
    assert limits.reassign(None, "a") == "per_ip", "the second connection stays unattributed"
    assert limits.reassign(None, "b") is None
    assert limits.reassign("b", "b") is None
    assert limits.reassign("b", "a") == "per_ip"
    assert limits.per_client == {"a": 1, "b": 1}
    limits.release("a")
    assert limits.reassign("b", "a") is None
    assert limits.per_client == {"a": 1}
    limits.release("a")
    assert limits.open == 0 and limits.per_client == {}


@pytest.mark.parametrize("open_files, connections", [
    (160, 96), (1024, 960), (20000, 19600), (1048576, 1027605), (10, 1),
])
def test_the_default_leaves_a_reserve_of_the_open_files_limit(open_files, connections):
    assert default_max_connections(open_files) == connections


def test_limit_and_timeout_flags_and_their_environment():
    config = parse_args([], environ={})
    assert (config.max_connections, config.max_connections_per_ip, config.client_address_header) \
        == (None, 0, None)
    assert (config.header_timeout, config.body_timeout) == (20.0, 20.0)
    assert (config.ws_ping_interval, config.ws_ping_timeout) == (25.0, 20.0)
    assert config.send_buffer == 64 << 10
    assert parse_args(["--send-buffer", "0"], environ={}).send_buffer == 0
    assert parse_args([], environ={"BROKER_SEND_BUFFER": "256KiB"}).send_buffer == 256 << 10
    config = parse_args(["--max-connections", "5000", "--ws-ping-interval", "0"], environ={
        "BROKER_MAX_CONNECTIONS_PER_IP": "50", "BROKER_CLIENT_ADDRESS_HEADER": "X-Real-IP",
        "BROKER_HEADER_TIMEOUT": "2.5", "BROKER_BODY_TIMEOUT": "7", "BROKER_WS_PING_TIMEOUT": "9"})
    assert (config.max_connections, config.max_connections_per_ip, config.client_address_header) \
        == (5000, 50, "X-Real-IP")
    assert (config.header_timeout, config.body_timeout, config.ws_ping_interval,
            config.ws_ping_timeout) == (2.5, 7.0, 0.0, 9.0)


@pytest.mark.parametrize("argv", [
    ["--max-connections", "0"], ["--header-timeout", "0"], ["--body-timeout", "-1"],
    ["--ws-ping-timeout", "nan"], ["--ws-ping-interval", "inf"],
    ["--client-address-header", "X-Forwarded-For: 1.2.3.4"],
])
def test_bad_limit_or_timeout_flags_are_refused(argv, capsys):
    with pytest.raises(SystemExit):
        parse_args(argv, environ={})
    assert "error" in capsys.readouterr().err


def test_new_sessions_arrive_at_the_accept_rate_in_bursts_of_as_many():
    limits = Limits(1000, accept_rate=10)
    assert all(limits.admit_new_session(100.0) is None for _ in range(10))
    wait = limits.admit_new_session(100.0)
    assert wait == pytest.approx(0.1) and limits.refused["accept_rate"] == 1
    assert limits.admit_new_session(100.05, take=False) == pytest.approx(0.05), "/info finds no token either"
    assert limits.admit_new_session(100.11, take=False) is None, "a token is there: /info takes none"
    assert limits.admit_new_session(100.11) is None
    assert limits.admit_new_session(100.11) is not None
    assert limits.refused["accept_rate"] == 3


def test_without_an_accept_rate_every_session_is_admitted():
    limits = Limits(1000)
    assert all(limits.admit_new_session(0.0) is None for _ in range(10000))
    assert limits.refused["accept_rate"] == 0


def test_only_the_trusted_proxies_may_name_a_client():
    proxies = TrustedProxies(["127.0.0.0/8", "10.1.2.3", "fd00::/8"])
    assert proxies.trusts("127.0.0.5") and proxies.trusts("10.1.2.3") and proxies.trusts("::ffff:127.0.0.1")
    assert proxies.trusts("fd00::1")
    assert not proxies.trusts("10.1.2.4") and not proxies.trusts("::1") and not proxies.trusts("garbage")
