"""The named rooms' audience reports on a real redis-server: two brokers' counts of each room
summed in that room's hash alone, over more rooms than one script reports (ROOMS_A_CALL), and
a broker that stops reporting a room dropped from its total once its count is stale."""

import asyncio

import redis

from broker.cluster import redis_address
from broker.cluster.audience_report import AUDIENCE_STALE_MS
from broker.cluster.replies import Replies
from broker.cluster.room_audiences import ROOMS_A_CALL, RoomAudiences, audience_key

PREFIX = "/broadcast"


def audiences(url, rooms):
    """A broker's reports of ``rooms``, ``{name: its viewers here}``: lists, as only their length is read."""
    return RoomAudiences(Replies.to(redis_address.parse(url)), PREFIX, lambda: rooms)


def test_each_rooms_total_is_every_brokers_count_of_it_alone(start_redis):
    url = start_redis().url
    names = ["r%d" % n for n in range(2 * ROOMS_A_CALL + 7)]
    first = {name: [None] * (n % 4) for n, name in enumerate(names)}
    second = {name: [None] * (n % 3) for n, name in enumerate(names[ROOMS_A_CALL // 2:])}

    async def report_both():
        one, other = audiences(url, first), audiences(url, second)
        try:
            await one.report()
            await other.report()
            await one.report()  # now with the other's counts
            return {name: one.total(name) for name in names}, {name: other.total(name) for name in second}
        finally:
            await one.replies.redis.aclose()
            await other.replies.redis.aclose()

    totals, others = asyncio.run(report_both())
    expected = {name: len(first[name]) + len(second.get(name, ())) for name in names}
    assert totals == expected
    assert others == {name: len(first[name]) + len(second[name]) for name in second}
    store = redis.Redis.from_url(url)
    assert store.hlen(audience_key(PREFIX, names[0])) == 1
    assert store.hlen(audience_key(PREFIX, names[-1])) == 2
    assert 0 < store.pttl(audience_key(PREFIX, names[-1])) <= 10 * AUDIENCE_STALE_MS


def test_a_broker_that_stops_reporting_a_room_leaves_its_total_once_stale(start_redis):
    url = start_redis().url
    staying = {"a": [None] * 2}
    leaving = {"a": [None] * 5}

    async def report_until_alone():
        one, other = audiences(url, staying), audiences(url, leaving)
        try:
            await other.report()
            await one.report()
            together = one.total("a")
            loop = asyncio.get_running_loop()
            deadline = loop.time() + AUDIENCE_STALE_MS / 1000.0 + 10
            while one.total("a") != 2 and loop.time() < deadline:
                await asyncio.sleep(0.2)
                await one.report()
            return together, one.total("a")
        finally:
            await one.replies.redis.aclose()
            await other.replies.redis.aclose()

    assert asyncio.run(report_until_alone()) == (7, 2)
