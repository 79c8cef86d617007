"""Counters' totals, bounds and latest messages, without a socket."""

import decimal
import json

import pytest

from broker.core import counters
from broker.core.counters import MAX_COUNTERS, Counters, amount, apply, conflating_key, key_of
from broker.core.conflation import valid_key


def test_amounts_are_decimals_with_their_scale_and_nothing_else_is_one():
    assert amount(" -3.50\n") == (decimal.Decimal("-3.50"), 2)
    assert amount("25") == (decimal.Decimal(25), 0)
    for text in ("1e3", "+1", "1.", ".5", "NaN", "Infinity", "0x10", "1_000", "1.0000001", "1" * 13, ""):
        with pytest.raises(ValueError):
            amount(text)


def test_adds_are_exact_and_shown_with_the_most_decimals_taken():
    total, scale = decimal.Decimal(0), 0
    for _ in range(100000):
        total, scale, _ = apply("add", total, scale, amount("0.01"))
    assert counters.shown(total, scale) == "1000.00"
    assert apply("add", total, scale, amount("-1000.5")).value == "-0.50"


def test_a_total_past_its_digits_is_refused():
    with pytest.raises(ValueError, match="more than 12 digits"):
        apply("add", decimal.Decimal("999999999999"), 0, amount("1"))
    assert apply("add", decimal.Decimal("999999999998"), 0, amount("0.999999")).value == "999999999998.999999"


def test_max_takes_only_a_greater_amount_and_else_changes_nothing():
    assert apply("max", decimal.Decimal(10), 0, amount("12.5")) == (decimal.Decimal("12.5"), 1, True)
    assert apply("max", decimal.Decimal(10), 0, amount("9.999")) == (decimal.Decimal(10), 0, False)


def test_units_are_whole_millionths():
    assert counters.units(decimal.Decimal("-999999999999.999999")) == -999999999999999999
    assert counters.message_prefix('a"b') + '1"}' == json.dumps(counters.message('a"b', "1"), separators=(",", ":"))


def test_a_counter_key_is_one_no_backend_can_give():
    key = conflating_key("raised")
    assert not valid_key(key.text) and key.counter == "raised"


def test_a_key_read_back_from_its_text_knows_its_counter_and_a_backend_s_names_none():
    assert key_of(conflating_key("raised").text) == conflating_key("raised")
    assert key_of("raised").counter is None and key_of("counter").counter is None


def test_a_room_holds_a_bounded_number_of_counters():
    room = Counters()
    for n in range(MAX_COUNTERS):
        room.change("c%d" % n, "add", amount("1"))
    with pytest.raises(ValueError, match="counters already"):
        room.change("one more", "add", amount("1"))
    assert room.change("c0", "add", amount("1")).value == "2"


def test_the_counters_a_room_holds_take_at_most_half_of_a_first_batch_at_their_longest():
    longest = json.dumps(counters.message('"' * 64, "-999999999999.999999"), separators=(",", ":"))
    envelope = '{"o":"18446744073709551615-18446744073709551615","d":%s},' % longest
    assert counters.LONGEST_MESSAGE_BYTES == len(envelope) == 228
    assert counters.most_counters(64 * 1024) == 143 and 143 * 228 <= 32 * 1024 < 144 * 228
    assert counters.most_counters(1024) == 2, "the least --max-buffer holds two"
    assert counters.most_counters(1 << 20) == counters.most_counters(None) == MAX_COUNTERS
    room = Counters(counters.most_counters(1024))
    room.change("a", "add", amount("1"))
    room.change("b", "add", amount("1"))
    with pytest.raises(ValueError, match=r"the room has 2 counters already, .* \(--max-buffer\)"):
        room.change("c", "add", amount("1"))


def test_first_batches_get_every_counter_latest_merged_in_offset_order():
    room = Counters()
    room.sent("a", "1700000000000-1", '{"counter":"a","value":"1"}')
    room.sent("b", "1700000000005-0", '{"counter":"b","value":"2"}')
    offsets, encoded = room.merged(["1700000000002-0", "1700000000005-0"], ['"x"', '{"counter":"b","value":"2"}'])
    assert offsets == ["1700000000000-1", "1700000000002-0", "1700000000005-0"]
    assert encoded[0] == '{"counter":"a","value":"1"}' and len(encoded) == 3
    kept = ([3], ['"y"'])
    assert Counters().merged(*kept) == kept


def test_a_load_keeps_the_newer_of_two_latest_messages():
    room = Counters()
    room.sent("a", "20-0", '{"counter":"a","value":"5"}')
    room.load([("a", "10-0", '{"counter":"a","value":"4"}'), ("b", "11-0", '{"counter":"b","value":"1"}')])
    assert room.stats() == {"a": "5", "b": "1"}
    room.restart()
    assert room.stats() == {} and len(room) == 0
