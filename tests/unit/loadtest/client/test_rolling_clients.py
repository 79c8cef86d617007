"""Where a client of a rolling restart goes when it loses its broker, without sockets."""

import collections

from loadtest.client.rolling_clients import draw, reconnect_order


def test_the_others_first_then_the_broker_lost():
    for client in range(50):
        for brokers in (2, 3, 5):
            for lost in range(brokers):
                order = reconnect_order(client, lost, brokers)
                assert sorted(order) == list(range(brokers)) and order[-1] == lost
                assert order == reconnect_order(client, lost, brokers)
    assert reconnect_order(5, 0, 1) == [0]
    assert draw(7, 2) == draw(7, 2) != draw(7, 1)


def spread(clients, lost, brokers):
    """How many of ``clients`` try each broker first when they lose broker ``lost``."""
    return collections.Counter(reconnect_order(client, lost, brokers)[0] for client in clients)


def test_the_clients_of_one_broker_spread_evenly_over_the_others():
    for brokers in (2, 3, 5):
        for lost in range(brokers):
            firsts = spread(range(lost, 30000, brokers), lost, brokers)
            assert lost not in firsts and len(firsts) == brokers - 1
            assert max(firsts.values()) < 1.1 * min(firsts.values()), firsts


def test_where_a_client_went_after_one_loss_says_nothing_of_the_next():
    """Clients that moved together from broker 1 to broker 2 leave broker 2 for 1 and 3 alike:
    a drain closing them together hands them on to both."""
    moved = [client for client in range(0, 12000, 3) if reconnect_order(client, 0, 3)[0] == 1]
    firsts = spread(moved, 1, 3)
    assert sorted(firsts) == [0, 2] and max(firsts.values()) < 1.1 * min(firsts.values()), firsts
