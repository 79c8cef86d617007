"""The ping and heartbeat wheels' rules, on plain members: no sockets, no timer."""

import pytest

from broker.core.heartbeats import HeartbeatWheel, PingWheel


class Member:
    """Counts pings and heartbeats alike in ``pings``."""

    def __init__(self, answers=True):
        self.answers = answers
        self.awaiting_pong = False
        self.pings = 0
        self.timed_out = False

    def ping_due(self):
        self.pings += 1
        self.awaiting_pong = not self.answers

    def heartbeat_due(self):
        self.pings += 1

    def ping_timed_out(self):
        self.timed_out = True


@pytest.mark.parametrize("wheel", [PingWheel(interval=10, timeout=10, buckets=5), HeartbeatWheel(10, buckets=5)],
                         ids=["pings", "heartbeats"])
def test_every_member_is_pinged_once_per_interval_a_bucket_per_tick(wheel):
    assert wheel.tick_seconds == 2
    members = []
    for _ in range(5):
        member = Member()
        wheel.add(member)
        members.append(member)
        wheel.tick()
    assert [m.pings for m in members] == [1, 0, 0, 0, 0], "first pinged a turn of the wheel after joining"
    for _ in range(5):
        wheel.tick()
    assert [m.pings for m in members] == [2, 1, 1, 1, 1]


def test_a_member_that_does_not_answer_times_out_timeout_later_once():
    wheel = PingWheel(interval=10, timeout=4, buckets=5)
    assert wheel.check_after == 2
    silent, live = Member(answers=False), Member()
    wheel.add(silent)
    wheel.add(live)
    for _ in range(5):
        wheel.tick()
    assert silent.pings == 1 and not silent.timed_out
    wheel.tick()
    assert not silent.timed_out, "pinged one tick ago"
    wheel.tick()
    assert silent.timed_out and not live.timed_out
    assert len(wheel) == 1 and wheel.timed_out == 1
    for _ in range(20):
        wheel.tick()
    assert silent.pings == 1, "a timed-out member leaves the wheel"
    assert live.pings == 5


def test_a_timeout_of_a_whole_interval_is_checked_before_the_next_ping():
    wheel = PingWheel(interval=10, timeout=10, buckets=5)
    silent = Member(answers=False)
    wheel.add(silent)
    for _ in range(9):
        wheel.tick()
    assert silent.pings == 1 and not silent.timed_out
    wheel.tick()
    assert silent.pings == 1 and silent.timed_out


def test_a_discarded_member_is_pinged_no_more():
    wheel = PingWheel(interval=1, timeout=1, buckets=2)
    member = Member()
    wheel.add(member)
    wheel.discard(member)
    wheel.discard(member)
    for _ in range(4):
        wheel.tick()
    assert member.pings == 0 and len(wheel) == 0


def test_the_heartbeat_wheel_awaits_no_answer():
    wheel = HeartbeatWheel(interval=10, buckets=5)
    silent = Member(answers=False)
    wheel.add(silent)
    for _ in range(15):
        wheel.tick()
    assert silent.pings == 3 and not silent.timed_out and len(wheel) == 1
