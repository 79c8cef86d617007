"""The room's history without a room: offsets, bounds, and what a resume can have."""

import pytest

from broker.core.history import History
from broker.protocol.positions import offset_key


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
    assert history.tail(2) == ([4, 5], ['"4"', '"5"'])
    assert history.after(offset_key("2")) == ([3, 4, 5], ['"3"', '"4"', '"5"'])
    assert history.after(offset_key("5")) == ([], [])
    assert history.after(offset_key("1")) is None, "message 2 is gone"


def test_seconds_bound_what_is_kept_as_it_ages():
    history = History(100, seconds=10)
    history.add(["1-0"], ['"a"'], now=0)
    history.add(["2-0"], ['"b"'], now=5)
    history.trim(now=12)
    assert history.tail(5) == (["2-0"], ['"b"'])
    assert history.after(offset_key("1-0")) == (["2-0"], ['"b"'])
    assert history.after(offset_key("0-5")) is None


def test_without_a_count_only_the_newest_position_is_known():
    history = History(0)
    history.add(range(1, 4), ['"1"', '"2"', '"3"'], now=0)
    assert len(history) == 0 and history.newest_offset == "3"
    assert history.after(offset_key("3")) == ([], [])
    assert history.after(offset_key("2")) is None


def test_a_restart_forgets_everything_and_starts_after_its_offset():
    history = History(10)
    history.add(range(1, 4), ['"1"', '"2"', '"3"'], now=0)
    history.restart("7-0")
    assert len(history) == 0 and history.newest_offset == "7-0"
    assert history.after(offset_key("7-0")) == ([], [])
    assert history.after(offset_key("6-0")) is None
