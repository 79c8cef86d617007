"""The resuming subscriber without sockets: what it delivers, asks for, and counts."""

import pytest

from loadtest.framing import resuming
from loadtest.framing.resuming import ResumingSubscriber


def fed(subscriber, *envelopes):
    return [d for d in (subscriber.receive(e) for e in envelopes) if d is not None]


def test_it_asks_for_positions_then_to_resume_after_what_it_delivered():
    subscriber = ResumingSubscriber()
    assert subscriber.query() == "positions=1"
    assert fed(subscriber, {"c": "open", "epoch": "E", "o": "40"}, {"o": "40", "d": "tail"},
               {"o": "41", "d": "live"}) == [("40", "tail"), ("41", "live")]
    assert subscriber.query() == "positions=1&epoch=E&since=41"


def test_before_its_first_live_message_it_resumes_from_where_it_joined():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "1700000000000-5"})
    assert subscriber.query() == "positions=1&epoch=E&since=1700000000000-5"


def test_a_message_sent_again_on_a_resume_is_a_duplicate_and_dropped():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "1", "d": "a"}, {"o": "2", "d": "b"})
    assert fed(subscriber, {"c": "resumed", "epoch": "E", "o": "3"}, {"o": "2", "d": "b"},
               {"o": "3", "d": "c"}) == [("3", "c")]
    assert (subscriber.duplicates, subscriber.replayed, sum(subscriber.gaps.values())) == (1, 0, 0)


def test_each_connection_the_broker_took_is_a_start():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "1", "d": "a"}, {"a": {"audience": 1}})
    assert subscriber.starts == 1
    told = []
    subscriber.on_start = lambda: told.append(subscriber.starts)
    fed(subscriber, {"c": "resumed", "epoch": "E", "o": "1"}, {"o": "2", "d": "b"})
    assert subscriber.starts == 2 and told == [2]


def test_a_gap_is_counted_and_the_state_after_it_is_not_a_duplicate():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "5", "d": "seen"})
    assert fed(subscriber, {"c": "gap", "epoch": "E", "o": "9", "reason": "expired"}, {"o": "5", "d": "seen"},
               {"o": "9", "d": "latest"}) == [("9", "latest")]
    assert (subscriber.gaps["expired"], subscriber.replayed, subscriber.duplicates) == (1, 1, 0)


def test_another_epoch_starts_the_offsets_again():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "9", "d": "old"})
    assert fed(subscriber, {"c": "gap", "epoch": "F", "o": "1", "reason": "epoch"}, {"o": "1", "d": "new"}) == \
        [("1", "new")]
    assert subscriber.query() == "positions=1&epoch=F&since=1" and subscriber.gaps == {"epoch": 1}


def test_an_announcement_is_kept_apart():
    subscriber = ResumingSubscriber()
    assert fed(subscriber, {"a": {"audience": 3}}) == [] and subscriber.announcements == [{"audience": 3}]


def test_a_frame_is_counted_by_what_it_delivers():
    class Keeping(ResumingSubscriber):
        def __init__(self):
            super().__init__()
            self.kept = []

        def delivered(self, offset, message):
            self.kept.append((offset, message))

    subscriber = Keeping()
    frame = b'xxa[{"c":"open","epoch":"E","o":"1"},{"o":"1","d":"state"},{"o":"2","d":{"n":2}}]yy'
    assert subscriber.count_frame(frame, 2, len(frame) - 2) == 2
    assert subscriber.kept == [("1", "state"), ("2", {"n": 2})]
    again = b'a[{"c":"resumed","epoch":"E","o":"2"},{"o":"2","d":{"n":2}},{"o":"3","d":"new"}]'
    assert subscriber.count_frame(again, 0, len(again)) == 1
    assert subscriber.kept[-1] == ("3", "new") and subscriber.duplicates == 1


def test_it_orders_offsets_with_code_of_its_own():
    """The checker of "nothing missed" shares no code with the broker it checks."""
    assert resuming.offset_key.__module__ == "loadtest.framing.resuming"
    assert resuming.offset_key("10") > resuming.offset_key("9")
    assert resuming.offset_key("1700000000000-10") > resuming.offset_key("1700000000000-9")
    assert resuming.offset_key("1700000000001-0") > resuming.offset_key("1700000000000-99")
    for malformed in ("", "x", "4-", "-4", "4-x"):
        with pytest.raises(ValueError):
            resuming.offset_key(malformed)


@pytest.mark.parametrize("start", [
    {"c": "open", "epoch": "E", "o": "7"},
    {"c": "resumed", "epoch": "E", "o": "7"},
    {"c": "gap", "epoch": "E", "o": "7", "reason": "expired"},
])
def test_a_counters_total_sent_again_at_or_before_the_offset_is_state_not_a_duplicate(start):
    """Every connection's first messages carry each counter's latest total (docs/protocol.rst,
    "Counters"), which may be one the subscriber delivered already."""
    subscriber = ResumingSubscriber()
    total = {"counter": "likes", "value": "21.50"}
    assert fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "3", "d": total},
               {"o": "5", "d": "live"}) == [("3", total), ("5", "live")]
    assert fed(subscriber, start, {"o": "3", "d": total}, {"o": "8", "d": "next"}) == [("8", "next")]
    assert (subscriber.duplicates, subscriber.replayed) == (0, 1)


def test_a_message_like_a_counter_but_not_one_sent_again_is_still_a_duplicate():
    subscriber = ResumingSubscriber()
    fed(subscriber, {"c": "open", "epoch": "E", "o": "0"}, {"o": "3", "d": {"counter": "likes", "value": 21}})
    fed(subscriber, {"c": "resumed", "epoch": "E", "o": "3"}, {"o": "3", "d": {"counter": "likes", "value": 21}})
    assert (subscriber.duplicates, subscriber.replayed) == (1, 0)
