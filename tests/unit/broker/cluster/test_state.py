"""The backplane's bookkeeping without Redis: state changes, ids, backoff, refusals."""

import pytest

from broker.cluster.lifecycle import LifecycleEvent
from broker.cluster.state import Backoff, BackplaneState, before, stream_id
from broker.config import parse_args
from broker.core.seams import RelayUnavailable


def test_stream_ids_compare_by_time_then_sequence():
    assert stream_id("1700000000000-3") == (1700000000000, 3)
    assert stream_id(b"5-0") < stream_id("5-1") < stream_id("6-0")
    assert stream_id("0-0") == (0, 0)


def test_backoff_doubles_to_its_cap_and_resets():
    backoff = Backoff(first=0.05, cap=0.3)
    assert [backoff.next() for _ in range(5)] == [0.05, 0.1, 0.2, 0.3, 0.3]
    backoff.reset()
    assert backoff.next() == 0.05


@pytest.fixture
def state():
    return BackplaneState("sockjs-broker:/broadcast", clock_ms=lambda: 1000)


def test_connecting_then_up_is_not_a_reconnect(state):
    assert state.stats()["state"] == "connecting" and not state.is_up
    assert state.came_up()
    assert not state.came_up()
    assert state.is_up and state.reconnects == 0 and state.reason is None


def test_an_outage_is_counted_once_and_ends_with_a_reconnect(state):
    state.came_up()
    assert state.went_down("Redis: Connection closed by server.")
    assert not state.went_down("Redis: Connection refused")
    assert state.stats()["state"] == "down" and state.reason == "Redis: Connection refused"
    assert state.came_up()
    assert state.reconnects == 1


def test_a_refusal_is_counted_and_says_why(state):
    state.came_up()
    state.went_down("Redis: Connection refused")
    refusal = state.refuse(3)
    assert isinstance(refusal, RelayUnavailable)
    assert str(refusal) == "the cluster backplane is down: Redis: Connection refused"
    assert state.refused == 3


def test_a_failed_write_is_refused_with_its_own_reason_while_up(state):
    state.came_up()
    refusal = state.refuse(2, "Redis: no answer within 3 s")
    assert str(refusal) == "the cluster backplane could not publish: Redis: no answer within 3 s"
    assert state.refused == 2 and state.is_up


def test_delivery_moves_the_cursor_and_measures_lag(state):
    state.read("0-0", 0)
    assert state.read_through("900-0", "940-2", 3) == 0.1
    stats = state.stats()
    assert (stats["last_id"], stats["delivered"], stats["lag_ms"]) == ("940-2", 3, 60)
    assert state.read_through("1200-0", "1200-0", 1) == 0
    assert state.lag_ms == 0
    assert state.position == 4


def test_a_read_starts_at_the_entry_before_the_last_delivered():
    assert before("1700000000000-3") == "1700000000000-2"
    assert before("1700000000000-0") == "1699999999999-18446744073709551615"
    assert before("0-0") == "0-0"


def test_a_last_entry_trimmed_alone_misses_nothing(state):
    state.read("5-0", 5)
    assert state.missing("6-0", 9, 4) is None  # 5 trimmed, the 5th the last delivered
    assert state.stats()["losses_trimmed"] == state.trimmed_unread == 0


def test_entries_trimmed_before_they_were_read_are_a_loss_counted(state):
    state.read("5-0", 5000)
    assert state.missing("9-0", 17200, 10100) == LifecycleEvent.TRIMMED  # 7,100 trimmed, of which 2,100 never read
    stats = state.stats()
    assert (stats["losses_trimmed"], stats["trimmed_unread"]) == (1, 2100)


def test_a_last_entry_missing_from_a_stream_holding_older_ones_is_a_failover_loss(state):
    state.read("9-0", 12)
    assert state.missing("3-0", 10, 10) == LifecycleEvent.FAILOVER
    assert state.stats()["losses_failover"] == 1 and state.trimmed_unread == 0


def test_after_an_outage_a_trim_past_the_last_entry_is_a_loss_of_a_count_unknown(state):
    state.came_up()
    state.read("5-0", 3)
    state.went_down("Redis: gone")
    state.came_up()
    assert state.position is None
    assert state.missing("7-0", 20, 10) == LifecycleEvent.TRIMMED
    assert state.trimmed_unread == 0


def test_after_an_outage_a_broker_that_delivered_nothing_misses_nothing_of_a_new_entry(state):
    """Its last id is the stream's beginning: the first entry published after the outage is
    delivered, not taken for a trim past it (and lost to clients without positions)."""
    state.came_up()
    state.read("0-0", 0)
    state.went_down("Redis: gone")
    state.came_up()
    assert state.missing("7-0", 1, 1) is None
    assert state.missing("7-0", 3, 1) == LifecycleEvent.TRIMMED and state.trimmed_unread == 2


def test_redis_refusing_writes_for_memory_makes_it_unavailable(state):
    state.came_up()
    assert state.unavailable is None
    state.memory = "Redis: OOM command not allowed when used memory > 'maxmemory'."
    assert state.unavailable == state.stats()["reason"] == state.memory
    assert state.stats()["memory_full"] is True


def test_redis_flag_and_its_environment():
    assert parse_args([], environ={}).redis is None
    assert parse_args([], environ={"BROKER_REDIS": "redis://10.0.0.5:6379/2"}).redis == "redis://10.0.0.5:6379/2"
    assert parse_args(["--redis", "unix:///run/redis.sock"], environ={}).redis == "unix:///run/redis.sock"


def test_a_bad_redis_url_is_refused_like_a_bad_flag(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--redis", "127.0.0.1:6379"], environ={})
    assert "argument --redis: not a Redis URL (try redis://" in capsys.readouterr().err
