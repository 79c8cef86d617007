"""The Engine seam's typed request and result, and the idempotency window's answer to a retry."""

import pytest

from broker.core import counters
from broker.core.engines import CounterChange, Once, PublishRequest, PublishResult, first_answer
from broker.core.hub import Hub
from broker.core.idempotency import Answer, KeyReused, Window


def test_a_result_answers_as_post_publish_does_with_a_counter_s_total_only_when_it_has_one():
    assert PublishResult(3, "e", "7").body() == {"recipients": 3, "position": {"epoch": "e", "offset": "7"}}
    assert PublishResult(0, "e", "8", "21.50").body() == {"recipients": 0, "position": {"epoch": "e", "offset": "8"},
                                                          "value": "21.50"}


def test_a_result_is_what_an_answer_kept_states_marked_replayed_for_a_retry():
    kept = Answer("f00d", 12, "k3J9x2", "1700000000000-0", "5")
    assert PublishResult.of(kept) == PublishResult(12, "k3J9x2", "1700000000000-0", "5", False)
    assert PublishResult.of(kept, replayed=True).replayed


def test_a_request_is_a_message_or_a_counter_s_change_either_maybe_once():
    message = PublishRequest({"n": 1}, "total")
    assert (message.counter, message.once) == (None, None)
    change = PublishRequest(counter=CounterChange("raised", "add", counters.amount("2.5")), once=Once("k", "f"))
    assert change.message is None and change.conflating is None and change.counter.amount.scale == 1


def test_the_first_answer_binds_the_request_s_fingerprint_to_the_room_s_count_and_epoch():
    room = Hub(lambda callback: None)
    assert first_answer(room, PublishRequest("m", once=Once("k", "f00d"))) == Answer("f00d", 0, room.epoch, None)
    assert first_answer(room, PublishRequest("m"), "4", "9").fingerprint is None


def test_a_retry_of_the_same_request_is_counted_replayed_and_another_request_refused():
    window = Window(10)
    kept = Answer("f", 3, "e", "7")
    assert window.again(kept, "f") is kept
    with pytest.raises(KeyReused, match="this Idempotency-Key was used with another request"):
        window.again(kept, "g")
    assert (window.replayed, window.refused) == (1, 1)
