"""A named room's publish scripts on a real redis-server: the entry and its channel's text, the
room's epoch, idempotency and counters under the room's keys, every key expiring with the room,
and a batch through RoomWrites acknowledged after its WAIT."""

import asyncio
import decimal
import time

import redis
import redis.asyncio
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from broker.cluster import named_rooms, room_in_redis, room_writes
from broker.cluster.appends import Append, Count, OnceRecord
from broker.cluster.backplane import Backplane
from broker.cluster.named_rooms import RoomKeys
from broker.cluster.replies import Replies
from broker.cluster.room_writes import RoomWrites
from broker.core import counters
from broker.core.counters import Amount
from broker.core.seams import RelayUnavailable

PREFIX = "/broadcast"
EXPIRY_MS = 60000


class Room:
    """Room ``name``'s scripts run as RoomWrites queues them, one at a time, and its channel listened to."""

    def __init__(self, store, name, maxlen=10000, expiry_ms=EXPIRY_MS):
        self.store = store
        self.keys = RoomKeys.of(PREFIX, name)
        self.maxlen = maxlen
        self.expiry_ms = expiry_ms
        for script in room_writes.SCRIPTS:
            store.script_load(script.text)
        self.channel = store.pubsub()
        self.channel.subscribe(self.keys.channel)
        assert self.channel.get_message(timeout=5)["type"] == "subscribe"

    def run(self, entry, epoch):
        pipe = self.store.pipeline(transaction=False)
        room_writes.queue_script(pipe, self.keys, entry, self.maxlen, [self.keys.channel, self.expiry_ms, epoch])
        return named_rooms.answered(pipe.execute()[0])

    def publish(self, text, key=None, once=None, epoch="mine"):
        return self.run(Append(text, key, once), epoch)

    def count(self, name, operation, value, once=None, epoch="mine"):
        return self.run(Count(name, operation, Amount(decimal.Decimal(value), 0), once, 100), epoch)

    def told(self):
        """What the channel was told since, read back."""
        told = []
        while True:
            message = self.channel.get_message(timeout=0.5)
            if message is None:
                return told
            told.append(named_rooms.published(message["data"]))


def once(key, record="fingerprint 1 epoch"):
    return OnceRecord(key, record, 600)


def test_a_publish_appends_then_tells_the_channel_the_previous_and_new_ids(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    room = Room(store, "campaign-1")
    (appended, first), epoch = room.publish('"one"')
    assert appended and epoch == "mine"
    (_, second), _ = room.publish('"two"', key="price")
    entries = store.xrange(room.keys.stream)
    assert [entry_id.decode() for entry_id, _ in entries] == [first, second]
    assert entries[1][1] == {b"m": b'"two"', b"k": b"price"}
    assert room.told() == [named_rooms.Published("0-0", first, None, '"one"'),
                           named_rooms.Published(first, second, "price", '"two"')]
    room.channel.close()
    store.close()


def test_the_rooms_epoch_is_the_first_given_and_every_key_expires_with_the_room(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    room = Room(store, "news:sports", expiry_ms=EXPIRY_MS)
    assert room.publish('"a"', epoch="first")[1] == "first"
    assert room.count("raised", "add", "5", epoch="second")[1] == "first", "an epoch set stays"
    keys = room.keys
    for key in (keys.stream, keys.epoch, keys.counters):
        assert 0 < store.pttl(key) <= EXPIRY_MS, key
    assert store.pttl(keys.once_records) == -2, "no idempotency key, no records"
    new_epoch = store.register_script(room_in_redis.NEW_EPOCH)
    assert new_epoch(keys=[keys.epoch], args=["first", "after a failover"]) == b"after a failover"
    assert 0 < store.pttl(keys.epoch) <= EXPIRY_MS, "a new epoch expires with the room"
    room.expiry_ms = 1
    room.publish('"b"')
    time.sleep(0.05)  # Redis's clock passes the room's expiry
    assert not store.exists(keys.stream, keys.epoch, keys.counters)
    (_, first), epoch = room.publish('"after"', epoch="third")
    assert epoch == "third"
    assert room.told()[-1].prev == "0-0", "a room that expired starts a new stream"
    room.channel.close()
    store.close()


def test_idempotency_and_counters_are_the_rooms_own(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    a, b = Room(store, "a"), Room(store, "b")
    (appended, offset), _ = a.publish('"x"', once=once("k1"))
    assert appended
    (appended, record), _ = a.publish('"x"', once=once("k1"))
    assert not appended and record == "fingerprint 1 mine " + offset, "a retry appends nothing, the room's epoch kept"
    assert b.publish('"x"', once=once("k1"))[0][0], "the same key in another room is another key"
    assert len(a.told()) == 1 and len(b.told()) == 1
    assert a.count("raised", "add", "5", once=once("c1"))[0][0] == counters.APPENDED
    assert a.count("raised", "add", "5", once=once("c1"))[0][0] == counters.SEEN
    assert a.count("raised", "add", "2")[0][1].endswith(" 7")
    assert b.count("raised", "add", "1")[0][1].endswith(" 1"), "b's total is b's"
    assert a.count("raised", "max", "3")[0][0] == counters.UNCHANGED
    told = a.told()
    assert len(told) == 2 and told[-1].key == counters.conflating_key("raised").text
    assert '"raised"' in told[-1].encoded and told[-1].encoded.endswith('"7"}')
    assert store.hget(a.keys.counters, "v:raised") == b"7000000"
    for room in (a, b):
        room.channel.close()
    store.close()


def test_a_stream_is_trimmed_to_about_its_maxlen(start_redis):
    store = redis.Redis.from_url(start_redis().url)
    room = Room(store, "busy", maxlen=100)
    for n in range(1000):
        room.publish('"%d"' % n)
    assert 100 <= store.xlen(room.keys.stream) < 300
    room.channel.close()
    store.close()


def test_room_writes_answer_each_publish_of_one_batch_in_its_room(start_redis):
    server = start_redis()

    async def run():
        client = redis.asyncio.from_url(server.url, retry=Retry(NoBackoff(), 0))
        writes = RoomWrites(Replies(client), PREFIX, 10000, EXPIRY_MS, Backplane(server.url, PREFIX))
        answers = await asyncio.gather(writes.queue("a", Append('"1"', None), "ea"),
                                       writes.queue("b", Append('"2"', None, once("k")), "eb"),
                                       writes.queue("a", Count("n", "add", Amount(decimal.Decimal(3), 0), None, 10),
                                                    "ea"))
        await writes.close()
        return answers

    (one, epoch_a), (two, epoch_b), (three, epoch_a_again) = asyncio.run(run())
    assert one[0] and two[0] and three[0] == counters.APPENDED
    assert (epoch_a, epoch_b, epoch_a_again) == ("ea", "eb", "ea")
    store = redis.Redis.from_url(server.url)
    assert store.xlen(RoomKeys.of(PREFIX, "a").stream) == 2 and store.xlen(RoomKeys.of(PREFIX, "b").stream) == 1
    store.close()


def test_room_writes_run_their_scripts_again_after_redis_lost_them_and_never_ask_before(start_redis):
    server = start_redis()
    store = redis.Redis.from_url(server.url)
    one_room = RoomKeys.of(PREFIX, "a")

    async def run():
        client = redis.asyncio.from_url(server.url, retry=Retry(NoBackoff(), 0))
        writes = RoomWrites(Replies(client), PREFIX, 10000, EXPIRY_MS, Backplane(server.url, PREFIX))
        answers = [await writes.queue("a", Append('"1"', None), "e")]
        store.script_flush()  # as a new master after a failover holds none
        answers.append(await writes.queue("a", Append('"2"', None), "e"))  # one script, no transaction
        store.script_flush()
        answers += await asyncio.gather(writes.queue("a", Append('"3"', None, once("k")), "e"),
                                        writes.queue("a", Count("n", "add", Amount(decimal.Decimal(3), 0), None, 10),
                                                     "e"),
                                        writes.queue("a", Append('"4"', "key"), "e"))
        store.script_flush()
        store.script_load(room_writes.PUBLISH.text)  # a count lost, a publish after it held: never written out of order
        lost = asyncio.gather(writes.queue("a", Count("n", "add", Amount(decimal.Decimal(1), 0), None, 10), "e"),
                              writes.queue("a", Append('"5"', None), "e"), return_exceptions=True)
        answers += await lost
        answers.append(await writes.queue("a", Count("n", "add", Amount(decimal.Decimal(2), 0), None, 10), "e"))
        await writes.close()
        return answers

    store.config_resetstat()
    *taken, refused, fifth, counted = asyncio.run(run())
    assert all(written[0] for written, _ in taken + [fifth, counted]), (taken, fifth, counted)
    assert isinstance(refused, RelayUnavailable) and "No matching script" in str(refused)
    assert counted[0][1].endswith(" 5"), "the count refused was not applied"
    texts = [fields[b"m"] for _, fields in store.xrange(one_room.stream)]
    assert len(texts) == 7 and [text for text in texts if text[:1] == b'"'] == [b'"1"', b'"2"', b'"3"', b'"4"', b'"5"']
    stats = store.info("commandstats")
    assert "cmdstat_script|exists" not in stats
    # Loaded by the first write, then after each flush; one by the test.
    assert stats["cmdstat_script|load"]["calls"] == 4 * len(room_writes.SCRIPTS) + 1
    store.close()
