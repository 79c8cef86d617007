"""Room names and the rooms a URL joins: the rule, the bound, resume per room."""

import pytest

from broker.protocol import positions, room_names
from broker.protocol.room_names import Joining, parse_rooms, requested, valid_name


@pytest.mark.parametrize("name", ["a", "campaign-42", "news:sports", "A.b_c-d:9", "x" * 64])
def test_a_name_of_the_alphabet_and_length_is_valid(name):
    assert valid_name(name)


@pytest.mark.parametrize("name", ["", "x" * 65, "a b", "a,b", "é", "a/b", 'a"b', "a\\b", "a\n", "a{b"])
def test_any_other_text_is_not_a_name(name):
    assert not valid_name(name)


def test_names_are_split_deduplicated_in_order_and_bounded():
    assert parse_rooms("b,a,b,c", 3) == ("b", "a", "c")
    with pytest.raises(ValueError, match="at most 2"):
        parse_rooms("a,b,c", 2)


@pytest.mark.parametrize("value", ["", ",", "a,,b", "a,b c", "x" * 65])
def test_an_empty_value_or_a_bad_name_is_refused_whole_saying_the_rule(value):
    with pytest.raises(ValueError, match="1 to 64 characters of A-Z a-z 0-9 _ - . :"):
        parse_rooms(value, 16)


def query(**values):
    return {name.replace("_", "."): [value.encode()] for name, value in values.items()}


def test_without_rooms_the_default_room_with_todays_request():
    assert requested({}, 16) == Joining((), (positions.NONE,))
    asked = requested(query(positions="1", epoch="E", since="4"), 16)
    assert asked == Joining((), (positions.Request(True, ("E", "4")),))


def test_one_room_resumes_with_todays_parameters_or_its_own():
    assert requested(query(rooms="a"), 16) == Joining(("a",), (positions.NONE,))
    assert requested(query(rooms="a", positions="1", epoch="E", since="4"), 16).requests == (
        positions.Request(True, ("E", "4")),)
    own = {"rooms": [b"a"], "positions": [b"1"], "epoch": [b"E"], "since": [b"4"], "epoch.a": [b"F"],
           "since.a": [b"9"]}
    assert requested(own, 16).requests == (positions.Request(True, ("F", "9")),)


def test_several_rooms_resume_each_after_its_own_position_only():
    arguments = {"rooms": [b"a,b,c"], "positions": [b"1"], "epoch": [b"E"], "since": [b"4"],
                 "epoch.a": [b"F"], "since.a": [b"9"], "since.b": [b"3"]}
    assert requested(arguments, 16) == Joining(("a", "b", "c"), (
        positions.Request(True, ("F", "9")), positions.Request(True, None), positions.Request(True, None)))
    assert requested({"rooms": [b"a,b"]}, 16).requests == (positions.NONE, positions.NONE)


def test_a_refused_rooms_value_raises():
    with pytest.raises(ValueError):
        requested({"rooms": [b""]}, 16)
    with pytest.raises(ValueError):
        requested({"rooms": [b"a,b"]}, 1)
    with pytest.raises(ValueError):
        requested({"rooms": [b"\xff"]}, 16)


def test_a_publish_names_its_room_or_the_default_one():
    assert room_names.room_of([]) == room_names.DEFAULT == ""
    assert room_names.room_of(["a:b"]) == "a:b"
    with pytest.raises(ValueError, match="given 2 times"):
        room_names.room_of(["a", "b"])
    with pytest.raises(ValueError, match="not 'a b'"):
        room_names.room_of(["a b"])


def test_a_tag_puts_the_room_first():
    assert room_names.tag("a", '"hi"', False) == '{"r":"a","d":"hi"}'
    assert room_names.tag("a", '{"o":"4","d":7}', True) == '{"r":"a","o":"4","d":7}'
