"""The bytes a room's history holds, kept as it changes, and a history shrunk to a number of
bytes: its oldest messages forgotten, its horizon moved as its count moves it."""

from broker.core.history import History
from broker.protocol.positions import offset_key


def texts(*lengths):
    """JSON texts (strings) of these lengths, quotes included."""
    return ['"%s"' % ("x" * (length - 2)) for length in lengths]


def held(history):
    """The lengths of the texts the history gives, added: what ``bytes`` should say."""
    return sum(len(text) for _, text in history.tail(len(history)))


def test_added_messages_are_counted_and_those_the_count_forgets_uncounted():
    history = History(3)
    history.add(["1", "2"], texts(10, 20), now=0)
    assert history.bytes == 30
    history.add(["3", "4"], texts(30, 40), now=0)
    assert (len(history), history.bytes) == (3, 20 + 30 + 40) and history.bytes == held(history)


def test_a_conflated_message_counts_instead_of_the_one_it_replaces():
    history = History(10)
    history.add(["1", "2", "3"], texts(10, 100, 20), now=0, keys=[None, "price", None])
    assert history.bytes == 130
    history.add(["4"], texts(7), now=0, keys=["price"])
    assert (len(history), history.bytes) == (3, 37) and history.bytes == held(history)
    assert history.horizon == (0, 0), "a replaced message does not move the horizon"


def test_messages_older_than_the_age_are_uncounted():
    history = History(10, seconds=5)
    history.add(["1"], texts(50), now=0)
    history.add(["2"], texts(8), now=4)
    history.trim(now=6)
    assert (len(history), history.bytes) == (1, 8)


def test_a_restart_holds_nothing():
    history = History(10)
    history.add(["1", "2"], texts(10, 20), now=0, keys=["a", None])
    history.restart("7")
    assert (len(history), history.bytes) == (0, 0)
    history.add(["8"], texts(5), now=0)
    assert history.bytes == 5


def test_a_history_that_keeps_nothing_holds_nothing():
    history = History(0)
    history.add(["1"], texts(10), now=0)
    assert (len(history), history.bytes) == (0, 0)


def test_shrinking_forgets_the_oldest_until_at_most_so_many_bytes_and_moves_the_horizon():
    history = History(10)
    history.add(["1", "2", "3", "4"], texts(10, 10, 10, 10), now=0)
    assert history.shrink(25) == 2
    assert (len(history), history.bytes, history.forgotten) == (2, 20, 2)
    assert history.horizon == offset_key("2")
    assert history.after(offset_key("1")) is None, "message 2 is gone: a gap"
    assert [offset for offset, _ in history.after(offset_key("2"))] == ["4", "3"]
    assert history.shrink(20) == 0 and history.bytes == 20


def test_shrinking_takes_the_oldest_of_keyed_and_unkeyed_alike():
    history = History(10)
    history.add(["1", "2", "3", "4"], texts(10, 10, 10, 10), now=0, keys=["a", None, "b", None])
    history.shrink(15)
    assert [offset for offset, _ in history.tail(10)] == ["4"]
    assert history.horizon == offset_key("3") and history.bytes == held(history) == 10
    history.shrink(0)
    assert (len(history), history.bytes, history.horizon) == (0, 0, offset_key("4"))
