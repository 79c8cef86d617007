"""The room's history without a room: offsets, bounds, and what a resume can have."""

import pytest

from broker.core import history as history_module
from broker.core.history import History
from broker.protocol.positions import offset_key


def oldest_first(messages):
    """``(offsets, texts)`` of what :meth:`History.tail` or :meth:`History.after` gives, newest
    first, oldest first (None stays None)."""
    if messages is None:
        return None
    pairs = list(messages)[::-1]
    return [offset for offset, _ in pairs], [text for _, text in pairs]


def test_offsets_compare_as_numbers_not_text():
    assert offset_key("9") < offset_key("10")
    assert offset_key("1700000000000-9") < offset_key("1700000000000-10") < offset_key("1700000000001-0")
    assert offset_key(41) == offset_key("41") == (41, 0)


@pytest.mark.parametrize("bad", ["", "-1", "1-", "x", "1-2-3", "1 ", "9" * 41])
def test_anything_else_is_not_an_offset(bad):
    with pytest.raises(ValueError):
        offset_key(bad)


def test_the_count_bounds_what_is_kept_and_moves_the_horizon():
    history = History(3)
    history.add(range(1, 6), ['"%d"' % n for n in range(1, 6)], now=0)
    assert len(history) == 3 and history.forgotten == 2
    assert oldest_first(history.tail(2)) == ([4, 5], ['"4"', '"5"'])
    assert oldest_first(history.after(offset_key("2"))) == ([3, 4, 5], ['"3"', '"4"', '"5"'])
    assert oldest_first(history.after(offset_key("5"))) == ([], [])
    assert oldest_first(history.after(offset_key("1"))) is None, "message 2 is gone"


def test_seconds_bound_what_is_kept_as_it_ages():
    history = History(100, seconds=10)
    history.add(["1-0"], ['"a"'], now=0)
    history.add(["2-0"], ['"b"'], now=5)
    history.trim(now=12)
    assert oldest_first(history.tail(5)) == (["2-0"], ['"b"'])
    assert oldest_first(history.after(offset_key("1-0"))) == (["2-0"], ['"b"'])
    assert oldest_first(history.after(offset_key("0-5"))) is None


def test_without_a_count_only_the_newest_position_is_known():
    history = History(0)
    history.add(range(1, 4), ['"1"', '"2"', '"3"'], now=0)
    assert len(history) == 0 and history.newest_offset == "3"
    assert oldest_first(history.after(offset_key("3"))) == ([], [])
    assert oldest_first(history.after(offset_key("2"))) is None


def test_a_restart_forgets_everything_and_starts_after_its_offset():
    history = History(10)
    history.add(range(1, 4), ['"1"', '"2"', '"3"'], now=0)
    history.restart("7-0")
    assert len(history) == 0 and history.newest_offset == "7-0"
    assert oldest_first(history.after(offset_key("7-0"))) == ([], [])
    assert oldest_first(history.after(offset_key("6-0"))) is None


class CountedKey(tuple):
    """An offset's key that counts how often it is compared: the work a history does."""

    compared = 0

    def _count(compare):
        def counted(self, other):
            CountedKey.compared += 1
            return compare(self, other)
        return counted

    __eq__ = _count(tuple.__eq__)
    __lt__ = _count(tuple.__lt__)
    __le__ = _count(tuple.__le__)
    __gt__ = _count(tuple.__gt__)
    __ge__ = _count(tuple.__ge__)
    __hash__ = tuple.__hash__


def comparisons_of_an_update(monkeypatch, length):
    """How many offset comparisons updating one key costs a history of ``length``
    messages, every one the latest of its key."""
    monkeypatch.setattr(history_module, "offset_key", lambda offset: CountedKey(offset_key(offset)))
    history = History(length)
    history.add(range(1, length + 1), ['"v"'] * length, now=0, keys=["k%d" % n for n in range(length)])
    CountedKey.compared = 0
    history.add([length + 1], ['"new"'], now=0, keys=["k%d" % (length - 2)])  # one far from the oldest
    return CountedKey.compared


def test_a_keyed_update_costs_the_same_whatever_the_history_holds(monkeypatch):
    short, long = comparisons_of_an_update(monkeypatch, 1000), comparisons_of_an_update(monkeypatch, 100000)
    assert short == long <= 4


def replay_model(published, count):
    """What a history of ``count`` keeps of ``published`` ``(offset, text, key)``, by
    the rules: the latest of each key and the unkeyed ones, the last ``count`` of them."""
    latest = {key: offset for offset, _, key in published if key is not None}
    kept = [(o, t) for o, t, key in published if key is None or latest[key] == o]
    return kept[-count:] if count else []


@pytest.mark.parametrize("count", [1, 5, 40])
def test_replay_and_resume_give_the_kept_messages_in_offset_order(count):
    history = History(count)
    published = []
    for offset in range(1, 201):
        key = None if offset % 3 == 0 else "k%d" % (offset * 7 % 11)
        published.append((offset, '"%d"' % offset, key))
        history.add([offset], ['"%d"' % offset], now=0, keys=None if key is None else [key])
        kept = replay_model(published, count)
        assert len(history) == len(kept)
        offsets, texts = oldest_first(history.after(history.horizon))
        assert list(zip(offsets, texts)) == kept
        keyed = {o for o, _, key in published if key is not None}
        tail = [(o, t) for o, t in kept[-2:]] + [(o, t) for o, t in kept if o in keyed]
        assert list(zip(*oldest_first(history.tail(2)))) == sorted(set(tail))
    assert oldest_first(history.after(offset_key("199"))) == ([200], ['"200"'])
