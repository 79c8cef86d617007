"""A named room's sequence without Redis: each channel message delivered, recovered or ignored, each read judged."""

import pytest

from broker.cluster.room_sequences import ChannelStep, RoomSequence, StreamRead


@pytest.mark.parametrize("last, prev, new, step", [
    ("0-0", "0-0", "5-0", ChannelStep.DELIVER),  # the room's first message after an empty tail
    ("5-0", "5-0", "5-1", ChannelStep.DELIVER),  # the next one
    ("5-0", "5-0", "9-0", ChannelStep.DELIVER),  # ids need not be adjacent: prev says nothing came between
    ("5-0", "5-1", "5-2", ChannelStep.RECOVER),  # 5-1 never came: the channel lost it
    ("5-0", "0-0", "9-0", ChannelStep.RECOVER),  # a stream started again (keys expired, a failover)
    ("5-0", "4-0", "6-0", ChannelStep.RECOVER),  # prev before last: not the stream last was read from
    ("5-0", "4-0", "5-0", ChannelStep.IGNORE),  # delivered already (the tail loaded held it)
    ("5-0", "3-0", "4-0", ChannelStep.IGNORE),  # older than last: read by a recovery already
    ("5-1", "5-0", "5-1", ChannelStep.IGNORE),  # same milliseconds, sequence compared
    ("10-0", "9-0", "9-5", ChannelStep.IGNORE),  # ids compare as numbers, not as text
    ("9-0", "9-0", "10-0", ChannelStep.DELIVER),
])
def test_a_channel_message_is_delivered_recovered_or_ignored(last, prev, new, step):
    assert RoomSequence(last).judge(prev, new) is step


def test_a_sequence_starts_before_every_entry_and_moves_with_what_it_delivered():
    sequence = RoomSequence()
    assert sequence.last == "0-0"
    sequence.delivered("7-0")
    assert sequence.judge("7-0", "8-0") is ChannelStep.DELIVER
    assert sequence.judge("6-0", "7-0") is ChannelStep.IGNORE


@pytest.mark.parametrize("last, at_or_before, whole, read", [
    ("5-0", "5-0", False, StreamRead.HELD),  # the stream still holds the last id delivered
    ("0-0", None, True, StreamRead.HELD),  # before every entry of a stream that lost none
    ("0-0", None, False, StreamRead.TRIMMED),  # before every entry, and the first ones trimmed
    ("5-0", "4-9", True, StreamRead.FAILOVER),  # older entries but not it: this stream never held it
    ("5-0", None, False, StreamRead.TRIMMED),  # trimmed, or the room's keys expired
])
def test_a_read_after_the_last_id_is_held_trimmed_or_a_failover(last, at_or_before, whole, read):
    assert RoomSequence(last).judge_read(at_or_before, whole) is read
