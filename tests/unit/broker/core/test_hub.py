"""The hub's fan-out logic, without sockets: subscribers are plain recorders."""

import collections
import json
import types

import pytest

from broker.core import counters
from broker.core import history as history_module
from broker.core.hub import Hub, Keeping
from broker.core.resumes import AHEAD_WAIT_S
from broker.core.meters import LatencyHistogram, RateMeter
from broker.protocol import frames
from broker.protocol.batch import RAW_WEBSOCKET, SOCKJS_WEBSOCKET, Positioned, Streamed
from broker.protocol.close_codes import SLOW_CONSUMER


class Recorder:
    form = None

    def __init__(self, transport="websocket", accept=True):
        self.transport = transport
        self.accept = accept
        self.batches = []
        self.closed = None

    @property
    def writer(self):
        return self

    def write_batch(self, data, key):
        if self.accept:
            self.batches.append(list(data.encoded) if self.form is None else data)
        return self.accept

    def disconnect(self, code, reason):
        self.closed = (code, reason)


class FormRecorder(Recorder):
    def __init__(self, form):
        super().__init__()
        self.form = form


@pytest.fixture
def scheduled():
    return []


@pytest.fixture
def hub(scheduled):
    return Hub(scheduled.append)


def run(scheduled):
    while scheduled:
        scheduled.pop(0)()


def test_publishes_in_one_iteration_share_one_flush(hub, scheduled):
    a, b = Recorder(), Recorder("xhr")
    hub.subscribe(a)
    hub.subscribe(b)
    assert hub.publish("1") == 2
    hub.publish({"two": 2})
    assert len(scheduled) == 1
    run(scheduled)
    assert a.batches == b.batches == [['"1"', '{"two":2}']]
    assert (hub.messages_in, hub.messages_out, hub.flushes) == (2, 4, 1)


def test_next_publish_schedules_a_new_flush(hub, scheduled):
    a = Recorder()
    hub.subscribe(a)
    hub.publish("1")
    run(scheduled)
    hub.publish("2")
    run(scheduled)
    assert a.batches == [['"1"'], ['"2"']]


def test_batch_builds_each_wire_form_once_for_all():
    hub_batches = []

    class Keeper(Recorder):
        def write_batch(self, batch, key):
            hub_batches.append(batch)
            return True

    scheduled = []
    hub = Hub(scheduled.append)
    for _ in range(3):
        hub.subscribe(Keeper())
    hub.publish("hi")
    hub.publish(7)
    run(scheduled)
    first = hub_batches[0]
    assert all(b is first for b in hub_batches)
    assert first.sockjs_body == '"hi",7'
    assert first.sockjs_websocket == b"\x81\x09a[\"hi\",7]"
    assert first.sockjs_websocket is first.sockjs_websocket
    assert first.raw_websocket == b"\x81\x02hi" + b"\x81\x017"
    chunk = first.form(Streamed("xhr_streaming", True))
    assert chunk == b'a\r\na["hi",7]\n\r\n'
    assert first.form(Streamed("xhr_streaming", True)) is chunk
    assert first.form(Streamed("xhr_streaming", False)) == b'a["hi",7]\n'
    assert first.form(Streamed("eventsource", True)) == b'13\r\ndata: a["hi",7]\r\n\r\n\r\n'


def test_a_moved_subscriber_takes_its_new_form_through_its_new_writer(hub, scheduled):
    viewer = Recorder("xhr_streaming")
    hub.subscribe(viewer)
    stream = FormRecorder(Streamed("xhr_streaming", True))
    viewer.form = stream.form
    hub.move(viewer, None, stream)
    hub.publish("1")
    run(scheduled)
    assert (viewer.batches, stream.batches) == ([], [b'7\r\na["1"]\n\r\n'])
    viewer.form = None
    hub.move(viewer, Streamed("xhr_streaming", True), viewer.writer)
    hub.publish("2")
    run(scheduled)
    assert viewer.batches == [['"2"']] and len(stream.batches) == 1
    assert hub.stats()["connections"] == {"xhr_streaming": 1}


def test_moving_a_subscriber_that_left_subscribes_nothing(hub, scheduled):
    gone = Recorder()
    hub.subscribe(gone)
    hub.unsubscribe(gone)
    hub.move(gone, None, gone.writer)
    hub.publish("1")
    run(scheduled)
    assert gone.batches == [] and len(hub) == 0


def test_slow_subscriber_is_dropped_counted_and_told(hub, scheduled):
    fast, slow = Recorder(), Recorder(accept=False)
    hub.subscribe(fast)
    hub.subscribe(slow)
    hub.publish("x")
    run(scheduled)
    assert slow.closed == SLOW_CONSUMER
    assert hub.stats()["slow_consumer_disconnects"] == 1
    assert len(hub) == 1
    hub.publish("y")
    run(scheduled)
    assert fast.batches == [['"x"'], ['"y"']]
    assert hub.messages_out == 2


def test_replay_sends_the_last_flushed_messages_first_and_never_twice(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=2))
    for value in "abc":
        hub.publish(value)
    run(scheduled)
    hub.publish("pending")
    late = Recorder()
    hub.subscribe(late)
    run(scheduled)
    assert late.batches == [['"b"', '"c"'], ['"pending"']]


def test_unsubscribe_is_idempotent_and_counts_by_transport(hub):
    a, b = Recorder("xhr"), Recorder("websocket")
    hub.subscribe(a)
    hub.subscribe(b)
    hub.unsubscribe(a)
    hub.unsubscribe(a)
    assert hub.stats()["connections"] == {"websocket": 1}
    assert hub.stats()["connections_total"] == 1


def test_rate_meter_averages_over_its_window():
    meter = RateMeter(window=2)
    assert meter.rates() is None
    meter.sample(0.0, 0, 0)
    meter.sample(1.0, 10, 100)
    meter.sample(2.0, 30, 100)
    assert meter.rates() == (15.0, 50.0)
    meter.sample(3.0, 30, 400)
    assert meter.rates() == (10.0, 150.0)


def test_latency_histogram_counts_by_upper_bound():
    histogram = LatencyHistogram()
    histogram.observe(0.0001)
    histogram.observe(0.003, messages=4)
    histogram.observe(60.0)
    buckets = dict(histogram.cumulative())
    assert (buckets[0.0001], buckets[0.0025], buckets[0.005], buckets[2.5]) == (1, 1, 5, 5)
    assert buckets[float("inf")] == 6
    assert histogram.sum == pytest.approx(0.0001 + 0.012 + 60.0)


class Clock:
    """A clock that reads ``now`` and counts its reads."""

    def __init__(self):
        self.now = 0.0
        self.reads = 0

    def __call__(self):
        self.reads += 1
        return self.now


def test_each_message_counts_at_its_batch_oldest_age_for_two_clock_reads_a_flush(scheduled):
    clock = Clock()
    hub = Hub(scheduled.append, clock=clock)
    for _ in range(50):
        hub.subscribe(Recorder())
    reads = clock.reads
    clock.now = 10.0
    hub.publish("first")
    clock.now = 10.002
    hub.publish("second")
    hub.publish("third")
    clock.now = 10.004
    run(scheduled)
    assert clock.reads - reads == 2
    buckets = dict(hub.latency.cumulative())
    assert (buckets[0.0025], buckets[0.005]) == (0, 3)
    assert hub.latency.sum == pytest.approx(3 * 0.004)
    hub.publish("alone")
    run(scheduled)
    assert dict(hub.latency.cumulative())[0.0001] == 1


@pytest.mark.parametrize("message", [float("nan"), {"x": float("inf")}, b"bytes", "lone \ud800"])
def test_unpublishable_message_is_refused_and_queues_nothing(scheduled, message):
    hub = Hub(scheduled.append, Keeping(replay=5))
    a = Recorder("rawwebsocket")
    hub.subscribe(a)
    with pytest.raises(ValueError):
        hub.publish(message)
    hub.publish("fine")
    run(scheduled)
    assert a.batches == [['"fine"']]
    assert hub.messages_in == 1


def test_subscribers_get_their_form_built_once_per_flush(scheduled):
    hub = Hub(scheduled.append)
    sockjs = [FormRecorder(SOCKJS_WEBSOCKET) for _ in range(3)]
    raw, whole = FormRecorder(RAW_WEBSOCKET), FormRecorder(None)
    for subscriber in sockjs + [raw, whole]:
        hub.subscribe(subscriber)
    hub.publish("hi")
    run(scheduled)
    frames = [s.batches[0] for s in sockjs]
    assert frames[0] == b'\x81\x07a["hi"]'
    assert all(f is frames[0] for f in frames)
    assert raw.batches == [b"\x81\x02hi"]
    assert whole.batches == [['"hi"']]
    assert hub.messages_out == 5


class Relay:
    """Stands in for the backplane: keeps what the hub hands over, or refuses it."""

    def __init__(self):
        self.taken = []
        self.refusal = None

    def __call__(self, encoded):
        if self.refusal is not None:
            raise self.refusal
        self.taken.append(encoded)


def test_with_a_relay_a_publish_is_only_handed_over(scheduled):
    relay = Relay()
    hub = Hub(scheduled.append, relay=relay)
    a = Recorder()
    hub.subscribe(a)
    assert hub.publish("1") == 1
    hub.publish({"two": 2})
    assert relay.taken == ['"1"', '{"two":2}']
    assert scheduled == [] and a.batches == []
    assert (hub.messages_in, hub.messages_out) == (2, 0)


def test_with_a_relay_bad_messages_and_refusals_reach_the_publisher(scheduled):
    relay = Relay()
    hub = Hub(scheduled.append, relay=relay)
    with pytest.raises(ValueError):
        hub.publish("\ud800")
    relay.refusal = ConnectionError("down")
    with pytest.raises(ConnectionError):
        hub.publish("1")
    assert relay.taken == [] and hub.messages_in == 0


def test_each_delivery_is_one_batch_and_feeds_replay(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=2), relay=Relay(), clock=Clock())  # the clock stands still
    a = Recorder()
    raw = FormRecorder(RAW_WEBSOCKET)
    hub.subscribe(a)
    hub.subscribe(raw)
    hub.deliver(['"1"', '{"n":2}'], ["5-0", "5-1"], age=0.003)
    hub.deliver(['"3"'], ["6-0"])
    assert a.batches == [['"1"', '{"n":2}'], ['"3"']]
    assert [count for _, count in hub.latency.cumulative()][4:6] == [1, 3], "3 ms, then at once"
    assert raw.batches == [b"\x81\x011\x81\x07{\"n\":2}", b"\x81\x013"]
    assert (hub.flushes, hub.messages_out) == (2, 6)
    late = Recorder()
    hub.subscribe(late)
    assert late.batches == [['{"n":2}', '"3"']]


def test_a_loaded_history_is_replayed_but_not_sent(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=2), relay=Relay())
    early = Recorder()
    hub.subscribe(early)
    hub.load(hub.epoch, "0-0", ["1-0", "2-0", "3-0"], ['"1"', '"2"', '"3"'])
    assert early.batches == [] and hub.flushes == 0
    late = Recorder()
    hub.subscribe(late)
    assert late.batches == [['"2"', '"3"']]


def test_an_announcement_rides_at_the_end_of_the_next_batch_uncounted_and_unreplayed(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=5))
    watcher, raw = Recorder(), FormRecorder(RAW_WEBSOCKET)
    hub.subscribe(watcher)
    hub.subscribe(raw)
    hub.announcement.announce('{"audience":1}')
    hub.announcement.announce('{"audience":2}')  # the newer replaces the one not yet sent
    hub.publish("m")
    run(scheduled)
    assert watcher.batches == [['"m"', '{"audience":2}']]
    assert raw.batches[0] == b"\x81\x01m\x81\x0e{\"audience\":2}"
    assert (hub.messages_in, hub.messages_out, hub.flushes) == (1, 2, 1)
    hub.send_announcement()  # already sent: nothing more
    late = Recorder()
    hub.subscribe(late)
    assert late.batches == [['"m"', '{"audience":2}']]  # the replay, then the latest count
    assert hub.messages_out == 3


def test_in_a_quiet_room_an_announcement_goes_alone_once(hub, scheduled):
    watcher = Recorder()
    hub.subscribe(watcher)
    hub.announcement.announce('{"audience":1}')
    assert watcher.batches == []
    hub.send_announcement()
    hub.send_announcement()
    assert watcher.batches == [['{"audience":1}']]
    assert (hub.messages_out, sum(hub.latency.counts)) == (0, 0)


def test_with_a_relay_an_announcement_rides_on_a_delivery_and_is_never_relayed(scheduled):
    relayed = []
    hub = Hub(scheduled.append, relay=relayed.append)
    watcher = Recorder()
    hub.subscribe(watcher)
    hub.announcement.announce('{"audience":3}')
    hub.deliver(['"from the stream"'], ["1-0"])
    assert watcher.batches == [['"from the stream"', '{"audience":3}']]
    assert relayed == []


# Positions and resume (broker.protocol.positions).


class PositionedRecorder(Recorder):
    """A subscriber with positions, keeping each message of its batches as JSON."""

    def __init__(self, inner=None):
        super().__init__()
        self.form = Positioned(inner)

    def write_batch(self, data, key):
        if self.accept:
            self.batches.append([json.loads(text) for text in data.encoded])
        return self.accept

    def messages(self):
        return [m for batch in self.batches for m in batch]


def published(hub, scheduled, *messages):
    for message in messages:
        hub.publish(message)
    run(scheduled)


def test_without_positions_the_bytes_are_the_same(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=1))
    plain, positioned = FormRecorder(SOCKJS_WEBSOCKET), PositionedRecorder()
    hub.subscribe(plain)
    hub.subscribe(positioned)
    published(hub, scheduled, "a")
    assert plain.batches == [frames.websocket_frame(b'a["a"]')]
    assert positioned.messages()[-1] == {"o": "1", "d": "a"}


def test_a_positioned_subscriber_gets_its_start_then_offsets(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=1))
    published(hub, scheduled, "before 1", "before 2")
    watcher = PositionedRecorder()
    hub.subscribe(watcher)
    published(hub, scheduled, "live")
    assert watcher.messages() == [{"c": "open", "epoch": hub.epoch, "o": "2"}, {"o": "2", "d": "before 2"},
                                  {"o": "3", "d": "live"}]
    assert hub.resumes.starts["open"] == 1


def test_a_resume_gets_every_message_after_its_offset_and_nothing_twice(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10))
    published(hub, scheduled, "1", "2", "3")
    watcher = PositionedRecorder()
    hub.subscribe(watcher, (hub.epoch, "1"))
    published(hub, scheduled, "4")
    assert watcher.messages() == [{"c": "resumed", "epoch": hub.epoch, "o": "3"}, {"o": "2", "d": "2"},
                                  {"o": "3", "d": "3"}, {"o": "4", "d": "4"}]
    caught_up = PositionedRecorder()
    hub.subscribe(caught_up, (hub.epoch, "4"))
    assert caught_up.messages() == [{"c": "resumed", "epoch": hub.epoch, "o": "4"}]


@pytest.mark.parametrize("since, reason", [
    (("another epoch", "2"), "epoch"),
    (("EPOCH", "0"), "expired"),
    (("EPOCH", "9"), "unknown"),
    (("EPOCH", "not an offset"), "unknown"),
])
def test_a_resume_that_cannot_be_complete_is_a_gap_then_the_replay_tail(scheduled, since, reason):
    hub = Hub(scheduled.append, Keeping(replay=1, history=2))
    published(hub, scheduled, "1", "2", "3")
    watcher = PositionedRecorder()
    hub.subscribe(watcher, (since[0].replace("EPOCH", hub.epoch), since[1]))
    assert watcher.messages() == [{"c": "gap", "epoch": hub.epoch, "o": "3", "reason": reason},
                                  {"o": "3", "d": "3"}]
    assert hub.resumes.starts[reason] == 1


def test_positioned_envelopes_are_built_once_per_batch_for_all(scheduled):
    hub = Hub(scheduled.append)
    seen = []

    class Keeper(PositionedRecorder):
        def write_batch(self, data, key):
            seen.append(data)
            return True

    for _ in range(3):
        hub.subscribe(Keeper(SOCKJS_WEBSOCKET))
    del seen[:]  # each one's start
    published(hub, scheduled, "x")
    assert len(seen) == 3 and seen[0] is seen[1] is seen[2]
    assert seen[0] == frames.websocket_frame(b'a[{"o":"1","d":"x"}]')


def test_an_announcement_has_no_offset_and_is_not_history(scheduled):
    hub = Hub(scheduled.append, Keeping(history=5))
    watcher = PositionedRecorder()
    hub.subscribe(watcher)
    hub.announcement.announce('{"audience":1}')
    published(hub, scheduled, "m")
    assert watcher.messages()[1:] == [{"o": "1", "d": "m"}, {"a": {"audience": 1}}]
    assert len(hub.history) == 1


def test_behind_its_cluster_a_broker_holds_a_resume_until_it_catches_up(scheduled):
    clock = [0.0]
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay(), clock=lambda: clock[0])
    hub.deliver(['"1"'], ["10-0"])
    early = PositionedRecorder()
    hub.subscribe(early, (hub.epoch, "11-0"))  # seen through another broker, not here yet
    assert early.batches == [] and len(hub) == 1
    hub.deliver(['"2"', '"3"'], ["11-0", "12-0"])
    assert early.messages() == [{"c": "resumed", "epoch": hub.epoch, "o": "12-0"}, {"o": "12-0", "d": "3"}]
    assert hub.resumes.starts["resumed"] == 1
    never = PositionedRecorder()
    hub.subscribe(never, (hub.epoch, "99-0"))
    clock[0] = AHEAD_WAIT_S + 1
    hub.sample()
    assert never.messages()[0]["reason"] == "unknown"


class CountedSince(tuple):
    """The ``(epoch, offset)`` a subscriber resumes after, counting how often the room reads it."""

    reads = 0

    def __iter__(self):
        CountedSince.reads += 1
        return super().__iter__()


def test_waiting_resumes_cost_a_delivery_one_test_however_many_wait(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.deliver(['"1"'], ["10-0"])
    waiting = [PositionedRecorder() for _ in range(1000)]
    for n, subscriber in enumerate(waiting):
        hub.subscribe(subscriber, CountedSince((hub.epoch, "%d-0" % (1000 + n))))
    assert CountedSince.reads == 1000, "each is judged once as it comes"
    for n in range(11, 1000):
        hub.deliver(['"%d"' % n], ["%d-0" % n])  # none reaches the offset any of them waits for
    assert CountedSince.reads == 1000 and not any(s.batches for s in waiting)
    hub.deliver(['"1000"', '"1001"'], ["1000-0", "1001-0"])
    assert [len(s.batches) for s in waiting[:3]] == [1, 1, 0], "those reached start, the others wait on"
    assert waiting[0].messages() == [{"c": "resumed", "epoch": hub.epoch, "o": "1001-0"},
                                     {"o": "1001-0", "d": "1001"}]
    assert waiting[1].messages() == [{"c": "resumed", "epoch": hub.epoch, "o": "1001-0"}]
    assert len(hub) == 1000 and hub.resumes.starts["resumed"] == 2


def test_in_a_cluster_an_offset_no_broker_can_have_given_yet_is_unknown_at_once(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.deliver(['"1"'], ["1700000000000-0"])
    future = PositionedRecorder()
    hub.subscribe(future, (hub.epoch, "99999999999999-0"))  # the year 5138 by Redis's clock
    assert future.messages()[0] == {"c": "gap", "epoch": hub.epoch, "o": "1700000000000-0", "reason": "unknown"}
    assert hub.resumes.starts["unknown"] == 1


def test_a_waiting_subscriber_that_left_is_skipped_when_its_offset_comes(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    gone, staying = PositionedRecorder(), PositionedRecorder()
    for subscriber in (gone, staying):
        hub.subscribe(subscriber, (hub.epoch, "5-0"))
    hub.unsubscribe(gone)
    hub.deliver(['"5"'], ["5-0"])
    assert gone.batches == [] and staying.messages()[0]["c"] == "resumed"
    assert len(hub) == 1 and hub.resumes.starts["resumed"] == 1


def test_a_lost_history_is_a_gap_for_every_positioned_subscriber(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", ["1-0"], ['"1"'])
    plain, watcher, waiting = Recorder(), PositionedRecorder(), PositionedRecorder()
    hub.subscribe(plain)
    hub.subscribe(watcher)
    hub.subscribe(waiting, ("first", "5-0"))
    hub.load("second", "0-0", [], [])
    assert watcher.messages()[-1] == {"c": "gap", "epoch": "second", "o": "0-0", "reason": "epoch"}
    assert waiting.messages() == [{"c": "gap", "epoch": "second", "o": "0-0", "reason": "epoch"}]
    assert plain.batches == []
    hub.deliver(['"new"'], ["2-0"])
    assert watcher.messages()[-1] == {"o": "2-0", "d": "new"}


def test_a_waiting_subscriber_that_leaves_is_forgotten(scheduled):
    hub = Hub(scheduled.append, relay=Relay())
    waiting = PositionedRecorder()
    hub.subscribe(waiting, (hub.epoch, "5-0"))
    hub.unsubscribe(waiting)
    assert len(hub) == 0 and hub.by_transport["websocket"] == 0


def test_while_the_epoch_is_in_doubt_a_resume_waits_for_it(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", ["1-0"], ['"1"'])
    hub.doubt_epoch()
    same, learned_elsewhere = PositionedRecorder(), PositionedRecorder()
    hub.subscribe(same, ("first", "1-0"))
    hub.subscribe(learned_elsewhere, ("second", "0-0"))
    assert same.batches == learned_elsewhere.batches == []
    hub.load("second", "0-0", [], [])  # Redis came back without its data
    assert same.messages() == [{"c": "gap", "epoch": "second", "o": "0-0", "reason": "epoch"}]
    assert learned_elsewhere.messages() == [{"c": "resumed", "epoch": "second", "o": "0-0"}]


def test_a_confirmed_epoch_resumes_those_that_waited(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", ["1-0", "2-0"], ['"1"', '"2"'])
    hub.doubt_epoch()
    waiting = PositionedRecorder()
    hub.subscribe(waiting, ("first", "1-0"))
    hub.confirm_epoch()
    assert waiting.messages() == [{"c": "resumed", "epoch": "first", "o": "2-0"}, {"o": "2-0", "d": "2"}]


def test_a_room_not_loaded_yet_holds_its_opens_until_its_history_is_loaded(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=5, history=10), relay=Relay())
    hub.doubt_epoch(opens=True)  # a named room's first viewer, before its tail is read from Redis
    opened, plain, resuming = PositionedRecorder(), Recorder(), PositionedRecorder()
    hub.subscribe(opened)
    hub.subscribe(plain)
    hub.subscribe(resuming, ("cluster", "1-0"))
    assert opened.batches == plain.batches == resuming.batches == [] and len(hub) == 3
    hub.load("cluster", "0-0", ["1-0", "2-0"], ['"1"', '"2"'])
    assert opened.messages() == [{"c": "open", "epoch": "cluster", "o": "2-0"}, {"o": "1-0", "d": "1"},
                                 {"o": "2-0", "d": "2"}], "no open in a local epoch, then a gap"
    assert plain.batches == [['"1"', '"2"']], "the room's tail, replayed"
    assert resuming.messages() == [{"c": "resumed", "epoch": "cluster", "o": "2-0"}, {"o": "2-0", "d": "2"}]
    hub.doubt_epoch()  # Redis is away: opens start at once, as in the default room
    later = PositionedRecorder()
    hub.subscribe(later)
    assert later.messages()[0] == {"c": "open", "epoch": "cluster", "o": "2-0"}


def test_an_open_that_waited_for_a_load_too_long_starts_as_an_open(scheduled):
    clock = Clock()
    hub = Hub(scheduled.append, Keeping(history=10), clock=clock, relay=Relay())
    hub.doubt_epoch(opens=True)
    opened = PositionedRecorder()
    hub.subscribe(opened)
    clock.now += 6.0
    hub.sample()
    assert opened.messages() == [{"c": "open", "epoch": hub.epoch, "o": "0"}]
    assert hub.resumes.starts == {"open": 1}


def test_after_a_lost_history_a_subscriber_gets_all_of_the_new_epoch_it_holds(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", ["1-0"], ['"old"'])
    live = PositionedRecorder()
    hub.subscribe(live)
    hub.load("second", "0-0", ["2-0"], ['"new"'])  # published through another broker meanwhile
    assert live.messages()[-2:] == [{"c": "gap", "epoch": "second", "o": "2-0", "reason": "epoch"},
                                    {"o": "2-0", "d": "new"}]
    late = PositionedRecorder()
    hub.subscribe(late, ("first", "1-0"))
    assert late.messages() == live.messages()[-2:]


# Conflating keys (broker.core.conflation).


class KeyedRecorder(Recorder):
    """Keeps each batch's messages and the key it was written with."""

    def write_batch(self, data, key):
        self.batches.append((list(data.encoded), key))
        return True


def test_a_keyed_message_goes_alone_and_the_later_of_one_key_wins_in_a_flush(scheduled, hub):
    watcher = KeyedRecorder()
    hub.subscribe(watcher)
    for message, key in (("a", None), ("t1", "total"), ("b", None), ("t2", "total"), ("c", None)):
        hub.publish(message, key=key)
    run(scheduled)
    assert watcher.batches == [(['"a"', '"b"'], None), (['"t2"'], "total"), (['"c"'], None)]


def test_without_keys_one_flush_is_one_batch_written_without_a_key(scheduled, hub):
    watcher = KeyedRecorder()
    hub.subscribe(watcher)
    hub.publish("a")
    hub.publish("b")
    run(scheduled)
    assert watcher.batches == [(['"a"', '"b"'], None)]


def test_replay_gives_the_latest_of_each_key_and_the_last_messages(scheduled):
    hub = Hub(scheduled.append, Keeping(replay=2, history=100))
    for message, key in (("t1", "total"), ("a", None), ("t2", "total"), ("b", None), ("c", None), ("d", None)):
        hub.publish(message, key=key)
        run(scheduled)
    late = Recorder()
    hub.subscribe(late)
    assert late.batches == [['"t2"', '"c"', '"d"']]
    assert len(hub.history) == 5, "t1 was replaced"


def test_a_relay_takes_the_key_and_a_delivery_splits_by_it(scheduled):
    taken = []
    hub = Hub(scheduled.append, relay=lambda encoded, idempotent=None, key=None: taken.append((encoded, key)))
    hub.publish(7, key="total")
    assert taken == [("7", "total")]
    watcher = KeyedRecorder()
    hub.subscribe(watcher)
    hub.deliver(['"x"', "7", "8"], ["1-0", "1-1", "1-2"], keys=[None, "total", "total"])
    assert watcher.batches == [(['"x"'], None), (["8"], "total")]


def test_after_a_lost_history_a_plain_subscriber_gets_the_new_epochs_messages_too(scheduled):
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", [], [])
    plain = Recorder()
    hub.subscribe(plain)
    hub.load("second", "0-0", ["2-0"], ['"published meanwhile"'])
    assert plain.batches == [['"published meanwhile"']]


def test_a_gap_sends_a_plain_subscriber_only_what_it_was_not_sent(scheduled):
    """A failover's new epoch, or a broker behind the trim: the tail goes again to those with
    positions, after the gap; one without positions cannot tell a message it had from a new one."""
    hub = Hub(scheduled.append, Keeping(history=10), relay=Relay())
    hub.load("first", "0-0", [], [])
    plain, watcher = Recorder(), PositionedRecorder()
    hub.subscribe(plain)
    hub.subscribe(watcher)
    hub.deliver(['"1"', '"2"'], ["1-0", "2-0"])
    hub.load("second", "0-0", ["1-0", "3-0"], ['"1"', '"3"'])
    assert plain.batches == [['"1"', '"2"'], ['"3"']]
    assert [m.get("d", m.get("c")) for m in watcher.messages()[-3:]] == ["gap", "1", "3"]
    hub.load("second", "2-5", ["4-0"], ['"4"'])
    hub.tell_gap("expired")
    assert plain.batches[-1] == ['"4"'] and watcher.messages()[-2]["reason"] == "expired"


# What a start costs: the messages of the history it reads (broker.core.history, broker.core.resumes).


class Reads:
    """How many messages the history's queues have given since ``count`` was last set to 0."""

    count = 0


def _counted(entries):
    for entry in entries:
        Reads.count += 1
        yield entry


class CountedQueue(collections.deque):
    """The history's queue of unkeyed messages, counting each message read from it."""

    def __iter__(self):
        return _counted(super().__iter__())

    def __reversed__(self):
        return _counted(super().__reversed__())


class CountedLatest(collections.OrderedDict):
    """The history's latest message of each key, counting each one read from it."""

    def values(self):
        return CountedValues(self)


class CountedValues:
    def __init__(self, latest):
        self._values = collections.OrderedDict.values(latest)

    def __len__(self):
        return len(self._values)

    def __iter__(self):
        return _counted(iter(self._values))

    def __reversed__(self):
        return _counted(reversed(self._values))


STARTS = {
    "open without positions": lambda hub: hub.subscribe(Recorder()),
    "open": lambda hub: hub.subscribe(PositionedRecorder()),
    "resume from the oldest": lambda hub: hub.subscribe(PositionedRecorder(), (hub.epoch, "1000001-0")),
    "another epoch": lambda hub: hub.subscribe(PositionedRecorder(), ("another epoch", "1000001-0")),
    "unknown offset": lambda hub: hub.subscribe(PositionedRecorder(), (hub.epoch, "not an offset")),
    "gap told to all": lambda hub: hub.tell_gap("expired"),
}
# A first batch of at most 400 bytes: 12 of the messages below, each 3 bytes in an envelope of
# 14 and an offset of 9 ("1000001-0": every offset of the same length, whatever the history's).
FIRST_BATCH_BYTES = 400
FIRST_OFFSET = 10 ** 6


def reads_of_a_start(monkeypatch, start, length, keyed):
    """The messages a ``start`` reads of a history of ``length`` messages: each of a key of its
    own and ``--replay 1``, or none with a key and ``--replay`` the whole history."""
    monkeypatch.setattr(history_module, "collections",
                        types.SimpleNamespace(deque=CountedQueue, OrderedDict=CountedLatest))
    keeping = Keeping(replay=1 if keyed else length, history=length, first_batch_bytes=FIRST_BATCH_BYTES)
    hub = Hub(lambda callback: None, keeping, relay=Relay())
    keys = ["k%d" % n for n in range(length)] if keyed else None
    hub.load("epoch", "%d-0" % FIRST_OFFSET, ["%d-0" % (FIRST_OFFSET + n) for n in range(1, length + 1)],
             ['"v"'] * length, keys)
    Reads.count = 0
    start(hub)
    return Reads.count


@pytest.mark.parametrize("keyed", [False, True], ids=["replay all", "a key each"])
@pytest.mark.parametrize("start", list(STARTS.values()), ids=list(STARTS))
def test_a_start_reads_what_its_first_batch_holds_not_the_history(monkeypatch, start, keyed):
    short, long = (reads_of_a_start(monkeypatch, start, length, keyed) for length in (1000, 20000))
    # At most twice (a resume that does not fit, then the tail) the messages that fit, the one
    # past them and the one read ahead in the other queue.
    assert 0 < short == long <= 2 * (FIRST_BATCH_BYTES // (3 + 14 + 9) + 2)


def test_a_message_over_the_bound_as_kept_is_refused_and_nothing_queued(scheduled):
    hub = Hub(scheduled.append, max_message_size=13)
    a = Recorder()
    hub.subscribe(a)
    with pytest.raises(frames.MessageTooBig):
        hub.publish("\U0001f600")  # 4 bytes of UTF-8; "\ud83d\ude00" is 12 bytes, 14 with its quotes
    assert hub.publish("\u00e9abcde") == 1  # '"\u00e9abcde"' is 13 bytes: at the bound
    run(scheduled)
    assert a.batches == [['"\\u00e9abcde"']] and hub.messages_in == 1


def test_a_counter_s_message_is_the_broker_s_own_and_not_held_to_the_clients_bound(scheduled):
    hub = Hub(scheduled.append, max_message_size=13)
    a = KeyedRecorder()
    hub.subscribe(a)
    assert hub.count("visits", "add", counters.amount("1")) == (1, "1")
    run(scheduled)
    assert a.batches == [(['{"counter":"visits","value":"1"}'], counters.conflating_key("visits").text)]
