"""The named rooms' histories together under their bound (--max-rooms-history): each sample
totals them, and past the bound the largest forget their oldest messages, down to one level;
a resume past what they forgot is a gap; the default room is neither counted nor trimmed."""

import logging

from broker.core.hub import Hub
from broker.core.resumes import Keeping
from broker.core.rooms import Rooms
from broker.protocol import positions


def hub():
    return Hub(lambda callback: None, Keeping(history=1000))


def publish(room, count, length):
    """Publish ``count`` messages whose JSON texts are ``length`` bytes each (quotes included)."""
    for _ in range(count):
        room.publish("x" * (length - 2))
    room.flush()


def rooms_of(sizes, most):
    """Rooms holding, in room ``n``, ``sizes[n]`` messages of 100 bytes; bound at ``most`` bytes."""
    rooms = Rooms(hub(), lambda name: hub(), 100, 60.0)
    rooms.most_history_bytes = most
    for n, count in enumerate(sizes):
        publish(rooms.room("r%d" % n), count, 100)
    return rooms


def held(rooms):
    return [rooms.get("r%d" % n).history.bytes for n in range(len(rooms))]


def test_under_the_bound_nothing_is_forgotten(caplog):
    rooms = rooms_of([10, 20, 30], 6000)
    with caplog.at_level(logging.WARNING):
        rooms.sample()
    assert held(rooms) == [1000, 2000, 3000] and rooms.history_bytes() == 6000
    assert (rooms.history_trimmed, rooms.history_trimmed_bytes) == (0, 0) and not caplog.records


def test_over_the_bound_the_largest_forget_their_oldest_down_to_one_level(caplog):
    rooms = rooms_of([10, 50, 30, 40], 10000)
    with caplog.at_level(logging.WARNING):
        rooms.sample()
    assert held(rooms) == [1000, 3000, 3000, 3000], "the two largest cut to what the third holds"
    stats = rooms.stats()
    assert (stats["rooms_history_bytes"], stats["rooms_history_trimmed"], stats["rooms_history_trimmed_bytes"]) == (
        10000, 30, 3000)
    assert [record.getMessage() for record in caplog.records] == [
        "the named rooms' histories held 13000 bytes, over --max-rooms-history: the largest 2 forgot their oldest "
        "30 messages, 3000 bytes"]


def test_a_level_between_two_sizes_is_reached_and_a_message_is_forgotten_whole():
    rooms = rooms_of([10, 50, 30], 7050)
    rooms.sample()
    assert held(rooms) == [1000, 3000, 3000], "a level of 3,025 bytes keeps 30 whole messages"
    assert rooms.history_bytes() <= 7050


def test_a_resume_past_what_was_forgotten_is_a_gap_one_after_it_is_complete():
    rooms = rooms_of([5, 20], 1000)
    rooms.sample()
    trimmed = rooms.get("r1").history
    assert len(trimmed) == 5 and trimmed.horizon == (15, 0)
    epoch = rooms.get("r1").epoch
    assert rooms.get("r1").resumes.judge((epoch, "14"))[0] == positions.EXPIRED
    assert rooms.get("r1").resumes.judge((epoch, "15"))[0] == positions.RESUMED
    assert rooms.get("r0").resumes.judge((epoch, "0"))[0] != positions.EXPIRED


def test_the_default_room_is_neither_counted_nor_trimmed():
    rooms = rooms_of([10], 1000)
    publish(rooms.default, 1000, 1000)
    rooms.sample()
    assert rooms.default.history.bytes == 1000 * 1000 and len(rooms.default.history) == 1000
    assert rooms.history_bytes() == 1000 and rooms.history_trimmed == 0


def test_each_sample_brings_the_total_back_under_the_bound():
    rooms = rooms_of([10, 10], 1500)
    for _ in range(3):
        publish(rooms.get("r0"), 10, 100)
        rooms.sample()
        assert rooms.history_bytes() <= 1500
    assert held(rooms) == [800, 700], "the room published in is the largest, cut each time; the other once"
