"""The Engine seam (broker.core.engines) behaves alike in memory and through Redis.

Every test runs twice: on a MemoryEngine, and on a RedisEngine whose backplane writes to, and
reads back from, a real redis-server the test starts. The room is a Hub of the test's own, with
one subscriber with positions; what it is sent is read back as JSON."""

import asyncio
import json
import time

import pytest

from broker.cluster.backplane import Backplane
from broker.cluster.redis_engine import RedisEngine
from broker.core import counters
from broker.core.engines import CounterChange, Once, PublishRequest
from broker.core.hub import Hub, Keeping
from broker.core.idempotency import KeyReused, Window
from broker.core.memory_engine import MemoryEngine
from broker.protocol import frames
from broker.protocol.batch import Positioned
from broker.protocol.positions import offset_key

DELIVERY_S = 5


class Watcher:
    """A subscriber with positions: every message it is sent, as JSON."""

    transport = "websocket"

    def __init__(self):
        self.form = Positioned(None)
        self.messages = []

    @property
    def writer(self):
        return self

    def write_batch(self, data, key):
        self.messages += [json.loads(text) for text in data.encoded]
        return True

    def disconnect(self, code, reason):
        raise AssertionError("disconnected: %s %s" % (code, reason))

    def data(self):
        """What it was sent but its starts and gaps: each message's ``d``."""
        return [m["d"] for m in self.messages if "d" in m]


@pytest.fixture(params=["memory", "redis"])
def in_a_room(request):
    """``in_a_room(test, keeping, max_message_size)``: the result of ``await test(engine, room)``, an
    Engine of the test's kind, and its room (a Hub; through Redis, its backplane started)."""
    server = request.getfixturevalue("start_redis")() if request.param == "redis" else None

    def run(test, keeping=Keeping(history=10), max_message_size=None):
        async def in_memory():
            room = Hub(asyncio.get_running_loop().call_soon, keeping, max_message_size=max_message_size)
            return await test(MemoryEngine(Window(600.0)), room)

        async def through_redis():
            backplane = Backplane(server.url, "/broadcast", max(keeping.history, keeping.replay))
            room = Hub(asyncio.get_running_loop().call_soon, keeping, relay=backplane.append,
                       max_message_size=max_message_size)
            await backplane.start(room)
            try:
                return await test(RedisEngine(backplane, Window(600.0)), room)
            finally:
                await backplane.stop()

        return asyncio.run(in_memory() if server is None else through_redis())

    return run


async def delivered(room, offset):
    """Until the room has sent the message at ``offset`` (in memory, its flush; through Redis,
    its read loop), at most DELIVERY_S."""
    deadline = time.monotonic() + DELIVERY_S
    while room.history.newest < offset_key(offset):
        assert time.monotonic() < deadline, "offset %s not delivered within %d s" % (offset, DELIVERY_S)
        await asyncio.sleep(0.01)


def change(operation, amount, name="raised"):
    return PublishRequest(counter=CounterChange(name, operation, counters.amount(amount)))


def test_offsets_increase_in_the_room_s_epoch(in_a_room):
    async def test(engine, room):
        watcher = Watcher()
        room.subscribe(watcher)
        results = [await engine.publish(room, PublishRequest(text)) for text in ("a", "b", "c")]
        await delivered(room, results[-1].offset)
        return room, watcher, results

    room, watcher, results = in_a_room(test)
    keys = [offset_key(result.offset) for result in results]
    assert keys == sorted(set(keys)), results
    assert {(result.recipients, result.epoch, result.value, result.replayed) for result in results} == {
        (1, room.epoch, None, False)}
    assert watcher.messages[1:] == [{"o": result.offset, "d": text} for result, text in zip(results, "abc")]


def test_a_retry_gets_the_first_answer_again_and_publishes_once(in_a_room):
    async def test(engine, room):
        watcher = Watcher()
        room.subscribe(watcher)
        request = PublishRequest("once", "total", once=Once("retried", "fingerprint"))
        first = await engine.publish(room, request)
        again = await engine.publish(room, request)
        last = await engine.publish(room, PublishRequest("after"))
        await delivered(room, last.offset)
        return first, again, watcher, engine.window

    first, again, watcher, window = in_a_room(test)
    assert not first.replayed and again == first._replace(replayed=True)
    assert watcher.data() == ["once", "after"]
    assert (window.replayed, window.refused) == (1, 0)


def test_a_key_given_again_with_another_request_is_refused_and_publishes_nothing(in_a_room):
    async def test(engine, room):
        watcher = Watcher()
        room.subscribe(watcher)
        await engine.publish(room, PublishRequest("first", once=Once("reused", "fingerprint-1")))
        with pytest.raises(KeyReused):
            await engine.publish(room, PublishRequest("other", once=Once("reused", "fingerprint-2")))
        last = await engine.publish(room, PublishRequest("after"))
        await delivered(room, last.offset)
        return watcher, engine.window

    watcher, window = in_a_room(test)
    assert watcher.data() == ["first", "after"]
    assert (window.replayed, window.refused) == (0, 1)


def test_a_counter_adds_takes_a_greater_maximum_and_sends_each_change(in_a_room):
    async def test(engine, room):
        watcher = Watcher()
        room.subscribe(watcher)
        results = []
        for step in ("add", "25"), ("add", "-3.50"), ("max", "10"), ("max", "30"):
            results.append(await engine.publish(room, change(*step)))
            await delivered(room, results[-1].offset)  # each in a batch of its own: none conflated
        return watcher, results, room.counters.stats()

    watcher, results, sent = in_a_room(test)
    assert sent == {"raised": "30.00"}, "the room knows a counter's message as the counter's"
    assert [result.value for result in results] == ["25", "21.50", "21.50", "30.00"]
    assert results[2].offset == results[1].offset, "a maximum not above the total changes nothing"
    assert [message["value"] for message in watcher.data()] == ["25", "21.50", "30.00"]


def test_a_counter_s_change_with_an_idempotency_key_counts_once(in_a_room):
    async def test(engine, room):
        request = change("add", "5")._replace(once=Once("add five", "fingerprint"))
        return [await engine.publish(room, step) for step in (request, request, change("add", "1"))]

    first, again, after = in_a_room(test)
    assert again == first._replace(replayed=True) and first.value == "5"
    assert after.value == "6"


def test_a_counter_past_its_bounds_is_refused_and_keeps_its_total(in_a_room):
    async def test(engine, room):
        await engine.publish(room, change("add", "999999999999"))
        with pytest.raises(ValueError):
            await engine.publish(room, change("add", "1"))
        return await engine.publish(room, change("add", "0.5"))

    assert in_a_room(test).value == "999999999999.5"


def test_a_message_without_json_text_or_over_the_bound_publishes_nothing(in_a_room):
    async def test(engine, room):
        watcher = Watcher()
        room.subscribe(watcher)
        with pytest.raises(ValueError):
            await engine.publish(room, PublishRequest(float("nan")))
        with pytest.raises(ValueError):
            await engine.publish(room, PublishRequest("\ud800", once=Once("lone", "surrogate")))
        with pytest.raises(frames.MessageTooBig):
            await engine.publish(room, PublishRequest("x" * 30))
        last = await engine.publish(room, PublishRequest("fits"))
        await delivered(room, last.offset)
        return watcher, engine.window

    watcher, window = in_a_room(test, max_message_size=20)
    assert watcher.data() == ["fits"] and len(window) == 0


def test_a_resume_past_the_history_is_a_gap_and_one_within_it_resumes(in_a_room):
    async def test(engine, room):
        results = [await engine.publish(room, PublishRequest(str(n))) for n in range(4)]
        await delivered(room, results[-1].offset)
        late, recent = Watcher(), Watcher()
        room.subscribe(late, (room.epoch, results[0].offset))
        room.subscribe(recent, (room.epoch, results[2].offset))
        return room.epoch, results, late, recent

    epoch, results, late, recent = in_a_room(test, Keeping(replay=1, history=2))
    assert late.messages[0] == {"c": "gap", "epoch": epoch, "o": results[-1].offset, "reason": "expired"}
    assert late.data() == ["3"]
    assert recent.messages == [{"c": "resumed", "epoch": epoch, "o": results[-1].offset},
                               {"o": results[-1].offset, "d": "3"}]
