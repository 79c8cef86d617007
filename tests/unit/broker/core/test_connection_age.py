"""--max-connection-age without sockets: who is due when, spread, each once."""

import itertools

from broker.core.connection_age import JITTER, AgeLimit


def draws(*values):
    cycle = itertools.cycle(values)
    return lambda: next(cycle)


def test_a_connection_is_due_once_at_its_age():
    ages = AgeLimit(100, draw=draws(0.5))  # 0.5: the limit itself
    ages.add("a", now=10.0)
    assert ages.due(109.0) == []
    assert ages.due(110.0) == ["a"]
    assert ages.due(200.0) == []
    assert (ages.closed, len(ages)) == (1, 0)


def test_connections_opened_together_leave_spread_over_the_jitter():
    ages = AgeLimit(100, draw=draws(0.0, 0.25, 0.5, 0.75, 0.999))
    for name in "abcde":
        ages.add(name, now=0.0)
    leaving = [(second, ages.due(second)) for second in range(85, 115)]
    moments = [second for second, due in leaving for _ in due]
    assert len(moments) == 5 and len(set(moments)) == 5
    assert 100 * (1 - JITTER) <= min(moments) and max(moments) <= 100 * (1 + JITTER) + 1


def test_a_closed_connection_is_forgotten():
    ages = AgeLimit(10, draw=draws(0.5))
    ages.add("gone", now=0.0)
    ages.add("stays", now=0.0)
    ages.discard("gone")
    ages.discard("never added")
    assert ages.due(11.0) == ["stays"]
    assert ages.stats() == {"seconds": 10, "connections": 0, "closed": 1}


def test_a_late_check_returns_everything_due_since_the_last():
    ages = AgeLimit(10, draw=draws(0.5))
    ages.add("a", now=0.0)
    ages.add("b", now=5.0)
    ages.add("c", now=50.0)
    assert sorted(ages.due(30.0)) == ["a", "b"]
    assert ages.due(60.0) == ["c"]
