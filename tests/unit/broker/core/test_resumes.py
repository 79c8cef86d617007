from broker.core.counters import Counters
from broker.core.history import History
from broker.core.hub import Keeping
from broker.core.resumes import Resumes, Waiting, WaitingResumes
from broker.protocol import positions


def waiting(name, deadline=10.0):
    return Waiting(("e", "1"), deadline, None, name)



def sent_with_positions(offsets, encoded):
    """The bytes of a first batch's messages as a client with positions is sent them."""
    return len(",".join(positions.message(offset, text) for offset, text in zip(offsets, encoded))) + 1

def test_the_records_due_come_lowest_offset_first_and_once():
    resumes = WaitingResumes()
    for name, key in (("c", (30, 0)), ("a", (10, 0)), ("b", (20, 0))):
        resumes.add(waiting(name), key)
    assert not resumes.due((9, 0)) and resumes.due((10, 0))
    assert [(r.subscriber, key) for r, key in resumes.reached((20, 0))] == [("a", (10, 0)), ("b", (20, 0))]
    assert list(resumes) == ["c"] and list(resumes.reached((20, 0))) == []


def test_a_record_gone_is_skipped_and_the_heap_stays_bounded_by_those_waiting():
    resumes = WaitingResumes()
    for n in range(1000):
        resumes.add(waiting(n), (n, 0))
        assert resumes.remove(n)
    assert len(resumes._ahead) <= 2 * len(resumes) + 16
    assert list(resumes.reached((10 ** 6, 0))) == [] and list(resumes.expired(100.0)) == []


def test_deadlines_expire_in_the_order_they_came():
    resumes = WaitingResumes()
    resumes.add(waiting("early", 1.0), None)
    resumes.add(waiting("late", 5.0), (7, 0))
    assert [r.subscriber for r in resumes.expired(2.0)] == ["early"]
    assert [r.subscriber for r in resumes.expired(6.0)] == ["late"]
    assert len(resumes) == 0 and list(resumes.reached((7, 0))) == []


def test_a_start_is_judged_by_the_history_and_the_epoch():
    history = History(10)
    history.add(["1", "2"], ['"a"', '"b"'], 0.0)
    alone = Resumes(history, Keeping(replay=1), in_cluster=False, counters=Counters())
    epoch = alone.epoch
    assert alone.judge(None) == ("open", None)
    assert alone.judge((epoch, "1")) == ("resumed", (1, 0))
    assert alone.judge(("another", "1")) == ("epoch", None)
    assert alone.judge((epoch, "x")) == ("unknown", None)
    assert alone.judge((epoch, "9")) == ("unknown", (9, 0))
    batch = alone.first_batch("resumed", (1, 0))
    assert batch.encoded == ['"b"'] and alone.starts["resumed"] == 1


def test_in_a_cluster_an_offset_ahead_waits_unless_no_broker_can_have_given_it_yet():
    history = History(10)
    history.add(["1000-0"], ['"a"'], 0.0)
    cluster = Resumes(history, Keeping(), in_cluster=True, counters=Counters(), wall_clock=lambda: 2.0)
    assert cluster.judge((cluster.epoch, "6000-0")) == (None, (6000, 0))
    assert cluster.judge((cluster.epoch, "7001-0")) == ("unknown", (7001, 0))
    cluster.epoch_known = False
    assert cluster.judge((cluster.epoch, "1000-0")) == (None, None)


def test_a_first_batch_carries_at_most_its_bound_of_messages():
    history = History(100)
    history.add([str(n) for n in range(1, 101)], ['"%s"' % ("x" * 98) for _ in range(100)], 0.0)
    resumes = Resumes(history, Keeping(replay=100, first_batch_bytes=1000), in_cluster=False, counters=Counters())
    offsets, encoded = resumes.tail()
    assert offsets == [str(n) for n in range(93, 101)] and sent_with_positions(offsets, encoded) <= 1000
    # A resume whose messages do not fit is a gap, then the newest that do.
    batch = resumes.first_batch(*resumes.judge((resumes.epoch, "50")))
    assert '"reason":"expired"' in batch.lead and len(batch.encoded) == 8
    assert resumes.starts == {"expired": 1}
    assert resumes.first_batch(*resumes.judge((resumes.epoch, "95"))).offsets == [str(n) for n in range(96, 101)]


def test_a_first_batch_keeps_room_for_the_counters_it_carries():
    history = History(100)
    history.add([str(n) for n in range(1, 101)], ['"%s"' % ("x" * 98) for _ in range(100)], 0.0)
    counters = Counters()
    counters.sent("raised", "7", '{"counter":"raised","value":"%s"}' % ("9" * 460))
    resumes = Resumes(history, Keeping(replay=100, first_batch_bytes=1000), in_cluster=False, counters=counters)
    offsets, encoded = resumes.tail()
    assert sent_with_positions(*counters.merged(offsets, encoded)) <= 1000
    assert offsets == [str(n) for n in range(98, 101)]


def test_a_first_batch_of_small_messages_holds_its_bound_as_sent_with_positions():
    """Each message's envelope counts, and the batch's lead: 1,000 one-character messages are
    sent to a client with positions as about 20 bytes each, and only as many as fit go."""
    history = History(1000)
    history.add([str(n) for n in range(1, 1001)], ['"x"'] * 1000, 0.0)
    resumes = Resumes(history, Keeping(replay=1000, first_batch_bytes=1000), in_cluster=False, counters=Counters())
    batch = resumes.first_batch(*resumes.judge(None))
    sent = "[%s]" % ",".join([batch.lead] + [positions.message(o, e) for o, e in zip(batch.offsets, batch.encoded)])
    assert 1000 - 2 * len('{"o":"1000","d":"x"},') < len(sent) <= 1000
