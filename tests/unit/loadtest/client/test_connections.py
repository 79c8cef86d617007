"""A group of clients as one spec, without sockets: how it spreads over worker processes."""

import pytest

from loadtest.client.connections import GroupSpec

URLS = ("http://127.0.0.1:9/broadcast", "http://127.0.0.1:10/broadcast")


def test_a_spec_spreads_its_clients_evenly_with_ids_running_on():
    parts = GroupSpec(URLS, "websocket", ["127.0.0.2"], first_id=3, count=10).spread(3)
    assert [(part.first_id, part.count) for part in parts] == [(3, 4), (7, 3), (10, 3)]
    assert {(part.urls, part.transport, part.source_addresses) for part in parts} == {
        (URLS, "websocket", ("127.0.0.2",))}


def test_no_part_of_a_spread_is_empty():
    assert [part.count for part in GroupSpec(URLS, count=2).spread(5)] == [1, 1]


def test_a_client_binds_to_the_source_addresses_in_turn():
    spec = GroupSpec(URLS, source_addresses=["127.0.0.2", "127.0.0.3"])
    assert [spec.source_address(n) for n in range(3)] == [("127.0.0.2", 0), ("127.0.0.3", 0), ("127.0.0.2", 0)]
    assert GroupSpec(URLS).source_address(5) is None


def test_one_url_is_not_a_list_of_them():
    with pytest.raises(TypeError):
        GroupSpec(URLS[0])
