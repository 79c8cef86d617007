"""The backplane's bookkeeping without Redis: state changes, ids, backoff, refusals."""

import pytest

from broker.cluster.state import Backoff, BackplaneState, stream_id
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
    state.read("0-0")
    assert state.deliver("900-0", "940-2", 3) == 0.1
    stats = state.stats()
    assert (stats["last_id"], stats["delivered"], stats["lag_ms"]) == ("940-2", 3, 60)
    assert state.deliver("1200-0", "1200-0", 1) == 0
    assert state.lag_ms == 0


def test_entries_trimmed_before_they_were_read_are_counted(state):
    state.read("0-0")
    assert state.counted(1000, True, 5000, 5000) == 0  # behind, position unknown: nothing can be told yet
    state.deliver("1-0", "1-999", 1000)
    assert state.position is None
    assert state.counted(200, False, 5200, 5200) == 0  # caught up: the position is the stream's count
    state.deliver("2-0", "2-199", 200)
    assert state.position == 5200
    assert state.counted(1000, True, 17200, 10100) == 1900  # 7,100 trimmed, of which 1,900 never read
    state.deliver("9-0", "9-999", 1000)
    assert (state.position, state.stats()["trimmed_unread"]) == (8100, 1900)
    assert state.counted(1000, True, 17300, 10000) == 0  # behind, but what was trimmed had been read


def test_an_outage_forgets_the_position(state):
    state.came_up()
    state.counted(3, False, 3, 3)
    state.deliver("1-0", "1-2", 3)
    assert state.position == 3
    state.went_down("Redis: gone")
    state.came_up()
    assert state.position is None


def test_redis_flag_and_its_environment():
    assert parse_args([], environ={}).redis is None
    assert parse_args([], environ={"BROKER_REDIS": "redis://10.0.0.5:6379/2"}).redis == "redis://10.0.0.5:6379/2"
    assert parse_args(["--redis", "unix:///run/redis.sock"], environ={}).redis == "unix:///run/redis.sock"


def test_a_bad_redis_url_is_refused_like_a_bad_flag(capsys):
    with pytest.raises(SystemExit):
        parse_args(["--redis", "127.0.0.1:6379"], environ={})
    assert "not a Redis URL: '127.0.0.1:6379'" in capsys.readouterr().err
