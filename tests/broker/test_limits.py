"""Connection accounting alone: admissions, refusals by reason, releases,
clients behind a proxy, what a client address is, and the default limit."""

import pytest

from broker.limits import Limits, client_key, default_max_connections


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
    assert limits.stats() == {"tcp_connections": 2, "refused": {"max_connections": 1, "per_ip": 0},
                              "accept_pauses": 0}
    limits.release("a")
    assert limits.admit("c") is None
    assert limits.per_client == {}, "nothing is kept per client without a per-client limit"


def test_the_per_client_limit_refuses_that_client_only():
    limits = Limits(100, max_per_client=2)
    assert limits.admit("a") is None and limits.admit("a") is None
    assert limits.admit("a") == "per_ip"
    assert limits.admit("b") is None
    assert limits.refused == {"max_connections": 0, "per_ip": 1}
    limits.release("a")
    assert limits.admit("a") is None
    for client in ("a", "a", "b"):
        limits.release(client)
    assert limits.open == 0 and limits.per_client == {}


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
