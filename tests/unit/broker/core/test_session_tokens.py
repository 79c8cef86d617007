"""Sessions and their tokens without a clock: the wait for a first token, a token's exp, the counts."""

from broker.core.session_tokens import SessionTokens
from broker.protocol.close_codes import TOKEN_EXPIRED, TOKEN_REFUSED, TOKEN_REQUIRED, TOKEN_WAIT_S

EPOCH = 1_800_000_000.0


def test_a_session_sending_no_token_is_due_the_wait_after_it_opened_and_counted_as_required():
    tokens = SessionTokens()
    tokens.wait("quiet", now=100.0)
    assert tokens.waiting() == ["quiet"]
    assert tokens.due(100.0 + TOKEN_WAIT_S - 0.5, EPOCH) == []
    assert tokens.due(100.0 + TOKEN_WAIT_S, EPOCH) == [("quiet", TOKEN_REQUIRED)]
    assert tokens.due(1000.0, EPOCH) == []
    assert tokens.stats()["refused"] == {"required": 1, "refused": 0, "expired": 0}
    assert tokens.stats()["waiting"] == 0


def test_a_session_that_joined_waits_no_more_and_is_due_at_its_tokens_exp_on_the_epochs_clock():
    tokens = SessionTokens()
    tokens.wait("page", now=100.0)
    tokens.hold("page", expires=EPOCH + 30)
    assert tokens.waiting() == []
    assert tokens.due(100.0 + TOKEN_WAIT_S + 1, EPOCH + 29) == []
    assert tokens.due(200.0, EPOCH + 30) == [("page", TOKEN_EXPIRED)]
    assert (tokens.expired, tokens.stats()["holding"]) == (1, 0)


def test_a_refresh_moves_the_exp_later_and_a_closed_session_is_forgotten():
    tokens = SessionTokens()
    tokens.hold("refreshed", expires=EPOCH + 10)
    tokens.hold("refreshed", expires=EPOCH + 70)
    tokens.hold("closed", expires=EPOCH + 10)
    tokens.forget("closed")
    tokens.forget("never seen")
    assert tokens.due(0.0, EPOCH + 60) == []
    assert tokens.due(0.0, EPOCH + 70) == [("refreshed", TOKEN_EXPIRED)]
    assert tokens.expired == 1


def test_refusals_are_counted_by_reason():
    tokens = SessionTokens()
    for close in (TOKEN_REQUIRED, TOKEN_REFUSED, TOKEN_REFUSED, TOKEN_EXPIRED):
        tokens.refuse(close)
    assert tokens.stats()["refused"] == {"required": 1, "refused": 2, "expired": 1}
