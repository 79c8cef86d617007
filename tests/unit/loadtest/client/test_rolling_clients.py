"""Where a client of a rolling restart goes when it loses its broker, without sockets."""

import collections

from loadtest.client.rolling_clients import reconnect_order


def test_the_others_first_then_the_broker_lost():
    assert reconnect_order(0, 0, 3) == [1, 2, 0]
    assert reconnect_order(1, 0, 3) == [2, 1, 0]
    assert reconnect_order(7, 2, 4) == [0, 1, 3, 2]
    assert reconnect_order(5, 0, 1) == [0]


def test_the_clients_of_one_broker_spread_evenly_over_the_others():
    for brokers in (2, 3, 5):
        for lost in range(brokers):
            firsts = collections.Counter(reconnect_order(client, lost, brokers)[0]
                                         for client in range(lost, 6000, brokers))
            assert lost not in firsts and len(firsts) == brokers - 1
            assert max(firsts.values()) - min(firsts.values()) <= 1
            assert all(sorted(reconnect_order(client, lost, brokers)) == list(range(brokers)) for client in range(9))
