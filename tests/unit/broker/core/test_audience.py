"""The audience count without sockets: here, the room, and when it is announced."""

from broker.core.audience import Audience


def test_a_broker_alone_is_the_whole_room():
    audience = Audience(lambda: 7)
    assert audience.room_count() == 7
    assert audience.stats() == {"here": 7, "room": 7, "announce_every_s": 0, "announced": None}
    assert audience.announcement(now=100.0) is None  # no period: never announced


def test_a_clusters_unknown_count_is_not_guessed_nor_announced():
    audience = Audience(lambda: 7, room=lambda: None, every=1.0)
    assert audience.room_count() is None
    assert audience.announcement(now=0.0) is None


def test_the_count_is_announced_once_a_period_and_only_when_it_changed():
    count = [10]
    audience = Audience(lambda: 3, room=lambda: count[0], every=5.0)
    assert audience.announcement(now=0.0) == '{"audience":10}'
    count[0] = 11
    assert audience.announcement(now=4.4) is None  # within the period (less EARLY_S)
    assert audience.announcement(now=4.6) == '{"audience":11}'
    assert audience.announcement(now=10.0) is None  # unchanged
    count[0] = 12
    assert audience.announcement(now=10.5) == '{"audience":12}'
    assert audience.stats()["announced"] == 12


def test_a_share_is_the_rooms_count_per_reporting_broker():
    assert Audience(lambda: 7).share() is None  # a broker alone
    assert Audience(lambda: 7, room=lambda: 6000, brokers=lambda: 3).share() == 2000
    assert Audience(lambda: 7, room=lambda: None, brokers=lambda: None).share() is None  # Redis away
    assert Audience(lambda: 7, room=lambda: 0, brokers=lambda: 0).share() is None
