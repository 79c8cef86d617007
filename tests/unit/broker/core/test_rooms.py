"""The rooms of a broker alone: made on first use, bounded, forgotten when empty and idle, totalled."""

import asyncio
import pytest

from broker.core.engines import Once, PublishRequest
from broker.core.figures import stats_of
from broker.core.hub import Hub
from broker.core.idempotency import Window
from broker.core.memory_engine import MemoryEngine
from broker.core.resumes import Keeping
from broker.core.rooms import Rooms, RoomsFull


class Clock:
    now = 100.0

    def __call__(self):
        return self.now


def hub():
    return Hub(lambda callback: None, Keeping(history=10), clock=Clock())


class Subscriber:
    """A room's subscriber that takes everything."""

    form = None

    def __init__(self, transport="websocket"):
        self.transport = transport
        self.writer = self

    def write_batch(self, batch, key):
        return True

    def disconnect(self, code, reason):
        pass


subscriber = Subscriber


def test_the_default_room_is_always_there_and_a_named_room_is_made_once():
    default = hub()
    rooms = Rooms(default, lambda name: hub(), 2, 60.0)
    assert rooms.get("") is rooms.room("") is default
    assert rooms.get("a") is None
    a = rooms.room("a")
    assert rooms.room("a") is a and rooms.get("a") is a and a.name == "a" and default.name == ""
    assert (len(rooms), rooms.created) == (1, 1)
    assert list(rooms) == [default, a]


def test_past_the_bound_a_new_room_is_refused_and_counted_an_old_one_still_given():
    rooms = Rooms(hub(), lambda name: hub(), 1, 60.0)
    a = rooms.room("a")
    with pytest.raises(RoomsFull, match="1 rooms"):
        rooms.room("b")
    assert rooms.room("a") is a and rooms.room("") is rooms.default
    assert (len(rooms), rooms.refused) == (1, 1)


def test_rooms_joined_together_are_made_all_or_none_past_the_bound():
    listener = Listener()
    rooms = Rooms(hub(), lambda name: hub(), 3, 60.0, listener=listener)
    a, = rooms.joined(["a"])
    with pytest.raises(RoomsFull, match="3 rooms"):
        rooms.joined(["a", "b", "c", "d"])
    assert (len(rooms), rooms.refused, rooms.created) == (1, 1, 1), "none of the new ones made"
    assert [name for _, name, _ in listener.told] == ["a"], "nor any listened to"
    assert rooms.joined(["c", "a", "b"])[1] is a and len(rooms) == 3


def test_a_room_is_forgotten_once_empty_and_idle_its_age_never_while_watched_or_published_in():
    clock = Clock()
    rooms = Rooms(hub(), lambda name: hub(), 10, 5.0, clock)
    watched, published, idle = rooms.room("w"), rooms.room("p"), rooms.room("i")
    watched.subscribe(subscriber())
    for step in range(7):
        published.publish("m%d" % step)
        rooms.sample()
        clock.now += 1.0
    assert rooms.get("i") is None and rooms.get("w") is watched and rooms.get("p") is published
    assert rooms.forgotten == 1
    for step in range(6):
        rooms.sample()
        clock.now += 1.0
    assert rooms.get("p") is None and rooms.get("w") is watched
    again = rooms.room("i")
    assert again is not idle and again.epoch != idle.epoch, "a room made again is a new history"
    assert rooms.default in rooms, "never the default room"


class Listener:
    """A :class:`broker.cluster.room_feeds.RoomListener` that notes what it is told."""

    def __init__(self, audiences=None):
        self.told = []
        self.audiences = audiences or {}

    def audience(self, name):
        return self.audiences.get(name)

    def room_joined(self, name, hub):
        self.told.append(("joined", name, hub))

    def room_forgotten(self, name):
        self.told.append(("forgotten", name))


def test_the_listener_hears_of_a_named_rooms_first_viewer_before_it_joins_and_of_the_room_forgotten():
    clock = Clock()
    listener = Listener()
    rooms = Rooms(hub(), lambda name: hub(), 10, 5.0, clock, listener=listener)
    published = rooms.room("p")
    assert listener.told == [], "a publish alone reads nothing of the room"
    a, = rooms.joined(["a"])
    assert listener.told == [("joined", "a", a)] and len(a) == 0, "told before the viewer is in"
    a.subscribe(subscriber())
    assert rooms.joined(["a", ""]) == [a, rooms.default]
    assert len(listener.told) == 1, "told once while it has viewers; never of the default room"
    assert rooms.joined(["p"]) == [published] and listener.told[1] == ("joined", "p", published)
    for step in range(7):
        rooms.sample()
        clock.now += 1.0
    assert listener.told[2:] == [("forgotten", "p")] and rooms.get("a") is a


def test_the_figures_are_todays_for_the_default_room_alone_and_totals_over_rooms():
    default = hub()
    rooms = Rooms(default, lambda name: hub(), 10, 60.0)
    assert {key: value for key, value in rooms.stats().items() if not key.startswith("rooms")
            and key != "multiplexed_sends_dropped"} == stats_of(default)
    default.subscribe(subscriber("websocket"))
    a = rooms.room("a")
    a.subscribe(subscriber("xhr_polling"))
    a.publish("x")
    a.flush()
    default.publish("y")
    default.flush()
    stats = rooms.stats()
    assert (stats["connections_total"], stats["connections"]) == (2, {"websocket": 1, "xhr_polling": 1})
    assert (stats["messages_in"], stats["messages_out"], stats["flushes"]) == (2, 2, 2)
    assert stats["history"]["epoch"] == default.epoch and stats["history"]["messages"] == 2
    assert (stats["rooms"], stats["rooms_created"], stats["rooms_forgotten"], stats["rooms_refused"]) == (1, 1, 0, 0)


def test_every_connection_once_a_session_of_several_rooms_once():
    rooms = Rooms(hub(), lambda name: hub(), 10, 60.0)
    alone, session = subscriber(), subscriber()
    rooms.default.subscribe(alone)
    for name in ("a", "b"):
        membership = subscriber()
        membership.connection = session
        rooms.room(name).subscribe(membership)
    assert rooms.connections() == [alone, session]


def test_an_idempotency_key_is_its_room_s():
    rooms = Rooms(hub(), lambda name: hub(), 10, 60.0)
    engine = MemoryEngine(Window(600.0))
    once = Once("k", "f")

    async def publish(room):
        return await engine.publish(rooms.room(room), PublishRequest("m", once=once))
    first_a, first_b, again_a, first_default = [asyncio.run(publish(room)) for room in ("a", "b", "a", "")]
    assert not first_a.replayed and not first_b.replayed and not first_default.replayed
    assert again_a.replayed and again_a.epoch == first_a.epoch != first_b.epoch
    assert rooms.get("a").messages_in == rooms.get("b").messages_in == rooms.default.messages_in == 1


class Recording(Subscriber):
    """A subscriber that keeps the JSON texts it is sent."""

    def __init__(self):
        super().__init__()
        self.texts = []

    def write_batch(self, batch, key):
        self.texts += batch.encoded
        return True


def test_each_named_room_announces_its_own_audience():
    clock = Clock()
    rooms = Rooms(hub(), lambda name: hub(), 10, 60.0, clock)
    in_a, also_in_a, in_b = Recording(), Recording(), Recording()
    for room, subscriber in (("a", in_a), ("a", also_in_a), ("b", in_b)):
        rooms.room(room).subscribe(subscriber)
    rooms.announce(5.0)
    rooms.announce(5.0)
    assert in_a.texts == also_in_a.texts == ['{"audience":2}'] and in_b.texts == ['{"audience":1}']
    rooms.room("b").unsubscribe(in_b)
    rooms.room("b").subscribe(Recording())
    clock.now += 5.0
    rooms.announce(5.0)
    rooms.announce(5.0)
    assert in_a.texts == ['{"audience":2}'], "unchanged: not announced again"


def test_in_a_cluster_a_named_room_announces_its_count_at_every_broker_and_nothing_while_unknown():
    rooms = Rooms(hub(), lambda name: hub(), 10, 60.0, Clock(), listener=Listener({"a": 5}))
    in_a, in_b = Recording(), Recording()
    rooms.joined(["a"])[0].subscribe(in_a)
    rooms.joined(["b"])[0].subscribe(in_b)
    rooms.announce(5.0)
    rooms.announce(5.0)
    assert in_a.texts == ['{"audience":5}'] and in_b.texts == [], "b's count is not known yet"
