"""Deadlines in buckets of a second, without a clock: due at their second, once, moved, forgotten."""

from broker.core.deadlines import Deadlines


def test_a_thing_is_due_at_the_second_its_moment_rounds_up_to_never_before_and_once():
    deadlines = Deadlines()
    deadlines.add("a", 10.2)
    deadlines.add("b", 11.0)
    assert deadlines.due(10.2) == []
    assert deadlines.due(10.99) == []
    assert sorted(deadlines.due(11.0)) == ["a", "b"]
    assert deadlines.due(100.0) == []
    assert len(deadlines) == 0


def test_adding_again_moves_a_thing_later_or_earlier():
    deadlines = Deadlines()
    deadlines.add("token", 1000.0)
    deadlines.add("token", 1060.0)  # refreshed
    assert len(deadlines) == 1
    assert deadlines.due(1059.0) == []
    assert deadlines.due(1060.0) == ["token"]
    deadlines.add("token", 2000.0)
    deadlines.add("token", 1500.0)
    assert deadlines.due(1500.0) == ["token"]


def test_a_thing_discarded_is_never_due_and_an_unknown_one_is_ignored():
    deadlines = Deadlines()
    deadlines.add("gone", 5.0)
    deadlines.add("stays", 5.0)
    deadlines.discard("gone")
    deadlines.discard("never added")
    assert list(deadlines) == ["stays"]
    assert deadlines.due(5.0) == ["stays"]


def test_a_late_look_returns_everything_due_since_the_last_and_the_rest_waits():
    deadlines = Deadlines()
    for name, moment in (("a", 1.0), ("b", 7.5), ("c", 30.0)):
        deadlines.add(name, moment)
    assert sorted(deadlines.due(20.0)) == ["a", "b"]
    assert list(deadlines) == ["c"]
    assert deadlines.due(30.0) == ["c"]


def test_with_nothing_held_a_look_walks_no_second_whatever_the_clock():
    """On the epoch's clock (a token's exp): once the last thing is discarded, the next thing
    added an hour later is found at its second, not after walking the hour between."""
    deadlines = Deadlines()
    deadlines.add("old", 1_700_000_000.0)
    deadlines.discard("old")
    assert deadlines._next is None
    deadlines.add("new", 1_700_003_600.0)
    assert deadlines._next == 1_700_003_600
    assert deadlines.due(1_700_003_600.0) == ["new"]
    assert deadlines._next is None
