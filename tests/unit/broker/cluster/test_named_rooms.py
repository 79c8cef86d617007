"""A named room's keys and the text its scripts publish, read back without Redis."""

import pytest

from broker.cluster import named_rooms, room_in_redis
from broker.cluster.named_rooms import Published, RoomKeys


def test_every_key_of_a_room_starts_with_its_channel_in_one_hash_slot():
    keys = RoomKeys.of("/broadcast", "news:sports")
    assert keys.channel == "sockjs-broker:/broadcast:room:{news:sports}"
    assert all(key.startswith(keys.channel + ":") for key in keys[1:])
    assert len(set(keys)) == len(keys)


def test_no_key_of_a_named_room_is_a_key_of_the_default_room():
    default = {room_in_redis.stream_key("/broadcast"), room_in_redis.epoch_key("/broadcast"),
               room_in_redis.counters_key("/broadcast"), room_in_redis.once_records_key("/broadcast"),
               room_in_redis.once_order_key("/broadcast"), room_in_redis.audience_key("/broadcast")}
    assert not default & set(RoomKeys.of("/broadcast", "a"))


@pytest.mark.parametrize("data, told", [
    (b'0-0 5-0 - "hello"', Published("0-0", "5-0", None, '"hello"')),
    (b'5-0 5-1 - "two words"', Published("5-0", "5-1", None, '"two words"')),
    (b'5-1 6-0 3:a b "x"', Published("5-1", "6-0", "a b", '"x"')),  # a key with a space
    (b'6-0 7-0 2:\xc3\xa9 {"v": 1}', Published("6-0", "7-0", "\u00e9", '{"v": 1}')),  # length in bytes
    (b'7-0 8-0 1:- "-"', Published("7-0", "8-0", "-", '"-"')),
])
def test_a_published_text_reads_back(data, told):
    assert named_rooms.published(data) == told


def test_a_script_answers_todays_answer_then_the_rooms_epoch():
    assert named_rooms.answered([1, b"5-0", b"k3J9x2"]) == ((True, "5-0"), "k3J9x2")
    assert named_rooms.answered([b"appended", b"5-0 12", b"k3J9x2"]) == (("appended", "5-0 12"), "k3J9x2")


@pytest.mark.parametrize("history_seconds, expiry_ms", [(0, 3600000), (60, 3600000), (7200, 7200000),
                                                        (4000.5, 4000500)])
def test_a_rooms_keys_outlive_its_history_and_an_hour(history_seconds, expiry_ms):
    assert named_rooms.expiry_ms(history_seconds) == expiry_ms
