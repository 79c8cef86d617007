"""Named rooms fed from a real redis-server in this process: two rooms' hubs on one pub/sub
connection, each given its own messages only and in order; what the connection missed while it
was cut read back from each room's stream; a room whose stream lost the last entry delivered
told a gap. The feeds reach Redis through a :class:`tcp_proxy.TcpProxy` the tests cut."""

import asyncio
import decimal
import json
import time

import pytest
import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from broker.cluster.appends import Append
from broker.cluster.backplane import Backplane
from broker.cluster.redis_engine import RedisEngine
from broker.cluster.replies import Replies
from broker.cluster.room_feeds import RoomFeeds
from broker.cluster.room_writes import RoomWrites
from broker.cluster.rooms_in_redis import RoomsInRedis
from broker.core.counters import Amount
from broker.core.engines import CounterChange, Once, PublishRequest
from broker.core.hub import Hub, Keeping
from broker.core.idempotency import Window
from broker.protocol.batch import Positioned
from tcp_proxy import TcpProxy

PREFIX = "/broadcast"
EXPIRY_MS = 600000


class Viewer:
    """A subscriber with positions, keeping every message it is sent as JSON."""

    transport = "websocket"
    form = Positioned(None)

    def __init__(self):
        self.sent = []

    @property
    def writer(self):
        return self

    def write_batch(self, data, key):
        self.sent.extend(json.loads(text) for text in data.encoded)
        return True

    def data(self):
        return [message["d"] for message in self.sent if "d" in message]

    def gaps(self):
        return [message["reason"] for message in self.sent if message.get("c") == "gap"]


async def until(condition, seconds=10):
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "not within %g s" % seconds
        await asyncio.sleep(0.02)


def client(url):
    return redis.asyncio.from_url(url, retry=Retry(NoBackoff(), 0), socket_connect_timeout=2)


@pytest.fixture
def redis_and_proxy(start_redis):
    server = start_redis()
    proxy = TcpProxy(server.port)
    yield server, proxy
    proxy.close()


def in_rooms(server, proxy, names, test, maxlen=10000):
    """Run ``test(feeds, writes, hubs, viewers)``: ``feeds`` through ``proxy``, a viewer joined in
    each of the rooms ``names`` once loaded, ``writes`` (streams of about ``maxlen``) straight to Redis."""

    async def run():
        loop = asyncio.get_running_loop()
        feeds = RoomFeeds(client(proxy.url), PREFIX, 100, EXPIRY_MS)
        writes = RoomWrites(Replies(client(server.url)), PREFIX, maxlen, EXPIRY_MS, Backplane(server.url, PREFIX))
        feeds.start()
        hubs, viewers = {}, {}
        for name in names:
            hubs[name] = Hub(loop.call_soon, Keeping(history=100), relay=lambda encoded: None)
            feeds.room_joined(name, hubs[name])
        await until(lambda: all(room.loaded for room in feeds._rooms.values()))
        for name in names:
            viewers[name] = Viewer()
            hubs[name].subscribe(viewers[name])
        try:
            return await test(feeds, writes, hubs, viewers)
        finally:
            await feeds.stop()
            await writes.close()

    return asyncio.run(run())


async def publish(writes, hubs, name, *texts):
    """Publish ``texts`` in room ``name`` in one batch (an epoch of its hub's, if it has one)."""
    epoch = hubs[name].epoch if name in hubs else "first"
    return await asyncio.gather(*[writes.queue(name, Append(json.dumps(text), None), epoch) for text in texts])


def test_two_rooms_on_one_connection_each_get_their_own_messages_in_order(redis_and_proxy):
    async def test(feeds, writes, hubs, viewers):
        for n in range(60):  # one at a time and in batches, interleaved
            await publish(writes, hubs, "a" if n % 3 else "b", "%s%d" % ("a" if n % 3 else "b", n))
        await publish(writes, hubs, "a", *["a-batch%d" % n for n in range(20)])
        await until(lambda: len(viewers["a"].data()) == 60 and len(viewers["b"].data()) == 20)
        assert viewers["a"].data() == ["a%d" % n for n in range(60) if n % 3] + ["a-batch%d" % n for n in range(20)]
        assert viewers["b"].data() == ["b%d" % n for n in range(0, 60, 3)]
        assert feeds.recoveries == 0 and not viewers["a"].gaps() and not viewers["b"].gaps()
        offsets = [message["o"] for message in viewers["a"].sent if "d" in message]
        assert offsets == sorted(offsets, key=lambda o: tuple(map(int, o.split("-"))))

    in_rooms(*redis_and_proxy, ["a", "b"], test)


async def subscribers(writes, channel):
    """How many connections Redis has subscribed to ``channel``."""
    return dict(await writes.replies.redis.pubsub_numsub(channel))[channel.encode()]


def test_a_room_joined_later_loads_its_tail_and_a_room_forgotten_is_sent_nothing(redis_and_proxy):
    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "late", "before1", "before2")
        hubs["late"] = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100, replay=10),
                           relay=lambda encoded: None)
        feeds.room_joined("late", hubs["late"])
        await until(lambda: feeds._rooms["late"].loaded)
        viewers["late"] = Viewer()
        hubs["late"].subscribe(viewers["late"])
        await publish(writes, hubs, "late", "after")
        await until(lambda: viewers["late"].data() == ["before1", "before2", "after"])
        channel = feeds._rooms["a"].keys.channel
        assert await subscribers(writes, channel) == 1
        feeds.room_forgotten("a")
        await publish(writes, hubs, "late", "last")
        await until(lambda: viewers["late"].data()[-1] == "last")
        deadline = time.monotonic() + 10
        while await subscribers(writes, channel) and time.monotonic() < deadline:  # its UNSUBSCRIBE on its way
            await asyncio.sleep(0.05)
        assert await subscribers(writes, channel) == 0, "Redis sends this broker nothing of a room forgotten"
        await publish(writes, hubs, "a", "unseen")
        assert viewers["a"].data() == [] and len(feeds) == 1

    in_rooms(*redis_and_proxy, ["a"], test)


def test_what_a_cut_connection_missed_is_read_back_from_each_rooms_stream(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "a", "a0")
        await until(lambda: viewers["a"].data() == ["a0"])
        proxy.refuse()
        await until(lambda: feeds.reconnects == 1)
        await publish(writes, hubs, "a", *["a%d" % n for n in range(1, 30)])
        await publish(writes, hubs, "b", "b0", "b1")
        proxy.forward()
        await until(lambda: len(viewers["a"].data()) == 30 and len(viewers["b"].data()) == 2)
        await publish(writes, hubs, "a", "a30")
        await until(lambda: len(viewers["a"].data()) == 31)
        assert viewers["a"].data() == ["a%d" % n for n in range(31)] and viewers["b"].data() == ["b0", "b1"]
        assert not viewers["a"].gaps() and not viewers["b"].gaps()

    in_rooms(server, proxy, ["a", "b"], test)


def test_a_room_whose_stream_lost_the_last_entry_delivered_is_told_a_gap(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "trimmed", "first")
        await until(lambda: viewers["trimmed"].data() == ["first"])
        proxy.refuse()
        await until(lambda: feeds.reconnects == 1)
        for n in range(10):
            await publish(writes, hubs, "trimmed", *["m%d-%d" % (n, i) for i in range(100)])
        await publish(writes, hubs, "kept", "k0")
        proxy.forward()
        await until(lambda: viewers["trimmed"].gaps() == ["expired"] and viewers["kept"].data() == ["k0"])
        await publish(writes, hubs, "trimmed", "live")
        await until(lambda: viewers["trimmed"].data()[-1] == "live")
        assert not viewers["kept"].gaps(), "a gap in one room is that room's"
        assert feeds.gaps["expired"] == 1

    in_rooms(server, proxy, ["trimmed", "kept"], test, maxlen=50)


def test_a_room_loaded_before_its_first_entry_whose_first_entries_were_trimmed_is_told_a_gap(redis_and_proxy):
    """Nothing delivered since the load of an empty room: what the read finds follows the stream's
    beginning only if the stream lost no entry."""
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        proxy.refuse()
        await until(lambda: feeds.reconnects == 1)
        for n in range(10):
            await publish(writes, hubs, "trimmed", *["m%d-%d" % (n, i) for i in range(100)])
        await publish(writes, hubs, "whole", "w0", "w1")
        proxy.forward()
        await until(lambda: viewers["trimmed"].gaps() == ["expired"] and viewers["whole"].data() == ["w0", "w1"])
        published = ["m%d-%d" % (n, i) for n in range(10) for i in range(100)]
        after_gap = viewers["trimmed"].sent[[message.get("c") for message in viewers["trimmed"].sent].index("gap"):]
        kept = [message["d"] for message in after_gap if "d" in message]
        assert kept == viewers["trimmed"].data() and 0 < len(kept) < len(published) and kept == published[-len(kept):]
        assert not viewers["whole"].gaps()
        await publish(writes, hubs, "trimmed", "live")
        await until(lambda: viewers["trimmed"].data()[-1] == "live")
        assert viewers["trimmed"].gaps() == ["expired"]

    in_rooms(server, proxy, ["trimmed", "whole"], test, maxlen=50)


def test_a_message_after_one_the_channel_never_told_is_recovered_from_the_stream(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "a", "told")
        await until(lambda: viewers["a"].data() == ["told"])
        # An entry the channel never tells (as one lost on the way), then one it tells after it.
        await writes.replies.redis.xadd(feeds._rooms["a"].keys.stream, {"m": json.dumps("untold")})
        await publish(writes, hubs, "a", "after")
        await until(lambda: len(viewers["a"].data()) == 3)
        assert viewers["a"].data() == ["told", "untold", "after"] and not viewers["a"].gaps()
        assert feeds.recoveries == 1

    in_rooms(server, proxy, ["a"], test)


def test_a_publish_through_the_engine_in_a_named_room_reaches_its_viewer_once_and_replays_its_answer(start_redis):
    server = start_redis()

    async def run():
        rooms = RoomsInRedis(server.url, PREFIX, 100, 0, Backplane(server.url, PREFIX))
        rooms.start()
        engine = RedisEngine(None, Window(60), rooms.writes)
        hub = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100), relay=lambda encoded: None)
        hub.name = "campaign-42"  # as the registry of rooms names its hubs
        rooms.feeds.room_joined(hub.name, hub)
        await until(lambda: rooms.feeds._rooms[hub.name].loaded)
        viewer = Viewer()
        hub.subscribe(viewer)
        request = PublishRequest("hello", once=Once("key-1", "fingerprint"))
        first = await engine.publish(hub, request)
        again = await engine.publish(hub, request)
        counted = await engine.publish(hub, PublishRequest(counter=CounterChange("raised", "add",
                                                                                 Amount(decimal.Decimal(5), 0))))
        await until(lambda: len(viewer.data()) == 2)
        await rooms.stop()
        return hub, viewer, first, again, counted

    hub, viewer, first, again, counted = asyncio.run(run())
    assert first.epoch == hub.epoch and not first.replayed
    assert again.replayed and again.offset == first.offset
    assert counted.value == "5" and counted.epoch == hub.epoch
    assert viewer.data()[0] == "hello" and viewer.sent[-1]["o"] == counted.offset


def test_a_publish_in_a_room_whose_keys_expired_while_a_broker_held_it_starts_a_new_epoch(start_redis):
    """The hub keeps the epoch it loaded; Redis lost the room's keys (they expire an hour after its
    last publish). The next publish through this broker must not give Redis that epoch again:
    a resume of before the expiry would pass as held, the messages lost with the keys unsaid."""
    server = start_redis()
    store = redis.Redis.from_url(server.url)

    async def run():
        rooms = RoomsInRedis(server.url, PREFIX, 100, 0, Backplane(server.url, PREFIX))
        rooms.start()
        engine = RedisEngine(None, Window(60), rooms.writes)
        hub = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100), relay=lambda encoded: None)
        hub.name = "quiet"
        rooms.feeds.room_joined(hub.name, hub)
        await until(lambda: rooms.feeds._rooms[hub.name].loaded)
        viewer = Viewer()
        hub.subscribe(viewer)
        before = await engine.publish(hub, PublishRequest("before"))
        await until(lambda: viewer.data() == ["before"])
        for key in store.keys("*{quiet}*"):
            store.delete(key)
        after = await engine.publish(hub, PublishRequest("after"))
        await until(lambda: viewer.data()[-1:] == ["after"])
        await rooms.stop()
        return hub, viewer, before, after

    hub, viewer, before, after = asyncio.run(run())
    assert after.epoch != before.epoch, "the expired room's epoch came back"
    assert hub.epoch == after.epoch and viewer.gaps() == ["epoch"]


def test_a_room_whose_stream_never_held_the_last_entry_delivered_starts_a_new_epoch(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "a", "before")
        await until(lambda: viewers["a"].data() == ["before"])
        epoch = hubs["a"].epoch
        # As a new primary without what this broker delivered: the stream holds an older entry only.
        stream = feeds._rooms["a"].keys.stream
        await writes.replies.redis.delete(stream)
        await writes.replies.redis.xadd(stream, {"m": json.dumps("older")}, id="1-1")
        await publish(writes, hubs, "a", "after")
        await until(lambda: viewers["a"].gaps() == ["epoch"])
        assert hubs["a"].epoch != epoch and feeds.gaps["epoch"] == 1
        await publish(writes, hubs, "a", "live")
        await until(lambda: viewers["a"].data()[-1] == "live")

    in_rooms(server, proxy, ["a"], test)


def test_a_clients_message_in_a_named_room_goes_through_its_relay_to_the_rooms_viewers_only(redis_and_proxy):
    async def test(feeds, writes, hubs, viewers):
        sender = Hub(asyncio.get_running_loop().call_soon, relay=writes.relay("a"))
        sender.publish("from a client")
        sender.publish({"n": 1}, key="k")
        await until(lambda: len(viewers["a"].data()) == 2)
        assert viewers["a"].data() == ["from a client", {"n": 1}] and viewers["b"].data() == []
        assert writes.refused == 0

    in_rooms(*redis_and_proxy, ["a", "b"], test)


def test_a_viewer_that_opened_before_its_room_new_to_redis_was_loaded_is_told_no_gap(redis_and_proxy):
    async def test(feeds, writes, hubs, viewers):
        hubs["new"] = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100), relay=lambda encoded: None)
        viewers["new"] = Viewer()
        feeds.room_joined("new", hubs["new"])
        hubs["new"].subscribe(viewers["new"])
        epoch = hubs["new"].epoch
        await until(lambda: feeds._rooms["new"].loaded)
        await publish(writes, hubs, "new", "first")
        await until(lambda: viewers["new"].data() == ["first"])
        assert hubs["new"].epoch == epoch and viewers["new"].gaps() == []
        assert viewers["new"].sent[0]["c"] == "open"

    in_rooms(*redis_and_proxy, ["a"], test)


def test_a_silent_connection_is_taken_as_failed_and_what_it_missed_is_read_back(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        proxy.hold()  # no FIN, no RST: only the missing PONG tells
        await publish(writes, hubs, "a", "while silent")
        await until(lambda: feeds.reconnects >= 1, seconds=15)
        proxy.forward()
        await until(lambda: viewers["a"].data() == ["while silent"], seconds=15)
        await publish(writes, hubs, "a", "after")
        await until(lambda: viewers["a"].data() == ["while silent", "after"])
        assert not viewers["a"].gaps()

    in_rooms(server, proxy, ["a"], test)


def test_a_room_joined_while_redis_is_away_is_loaded_once_it_is_back(redis_and_proxy):
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "late", "kept")
        proxy.refuse()
        hubs["late"] = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100, replay=10),
                           relay=lambda encoded: None)
        feeds.room_joined("late", hubs["late"])
        await until(lambda: feeds._behind or feeds._later is not None)
        assert not feeds._rooms["late"].loaded
        proxy.forward()
        await until(lambda: feeds._rooms["late"].loaded)
        viewers["late"] = Viewer()
        hubs["late"].subscribe(viewers["late"])
        await publish(writes, hubs, "late", "live")
        await until(lambda: viewers["late"].data() == ["kept", "live"])

    in_rooms(server, proxy, ["a"], test)


def test_a_viewer_of_a_room_joined_while_redis_is_away_opens_once_it_is_loaded_and_is_told_no_gap(redis_and_proxy):
    """Its opens wait for the room's epoch, through the pub/sub connection's failures meanwhile."""
    server, proxy = redis_and_proxy

    async def test(feeds, writes, hubs, viewers):
        await publish(writes, hubs, "late", "kept")
        proxy.refuse()
        hubs["late"] = Hub(asyncio.get_running_loop().call_soon, Keeping(history=100, replay=10),
                           relay=lambda encoded: None)
        feeds.room_joined("late", hubs["late"])
        failed = feeds.reconnects
        await until(lambda: feeds.reconnects > failed)
        viewers["late"] = Viewer()
        hubs["late"].subscribe(viewers["late"])
        assert viewers["late"].sent == [], "an open waits for the room's epoch"
        proxy.forward()
        await until(lambda: feeds._rooms["late"].loaded)
        await publish(writes, hubs, "late", "live")
        await until(lambda: viewers["late"].data() == ["kept", "live"])
        assert viewers["late"].gaps() == [] and viewers["late"].sent[0].get("epoch") == hubs["late"].epoch

    in_rooms(server, proxy, ["a"], test)
