"""One queued item per conflating key, without a socket."""

from broker.core.conflation import FORGET_SLACK, replace_queued, valid_key


def test_a_keyed_item_replaces_the_one_still_queued_and_goes_last():
    queue, latest = [b"chat 1"], {}
    total_1, total_2 = b"total 1", b"total 2"
    assert replace_queued(queue, latest, "total", total_1) is None
    queue.append(b"chat 2")
    assert replace_queued(queue, latest, "total", total_2) is total_1
    assert queue == [b"chat 1", b"chat 2", b"total 2"]


def test_an_item_no_longer_queued_is_not_looked_for_again():
    queue, latest = [], {}
    first = b"total 1"
    replace_queued(queue, latest, "total", first)
    queue[0] = memoryview(first)[3:]  # partly written: a slice, not the item
    assert replace_queued(queue, latest, "total", b"total 2") is None
    assert len(queue) == 2


def test_keys_of_other_names_do_not_touch_each_other():
    queue, latest = [], {}
    for key, item in (("a", b"a1"), ("b", b"b1"), ("a", b"a2")):
        replace_queued(queue, latest, key, item)
    assert queue == [b"b1", b"a2"]


def test_a_key_is_a_short_printable_token():
    assert valid_key("total") and valid_key("x" * 64)
    assert not any(valid_key(k) for k in ("", "x" * 65, "a b", "caf\u00e9", "tab\t"))


def test_the_keys_remembered_are_bounded_by_the_items_queued_not_by_the_keys_ever_sent():
    """A socket's backlog standing at 2,041 items, written from its head, while
    50,000 distinct keys go through it: what remembers them stays near the backlog's size."""
    queue, latest = [], {}
    standing = 2041
    largest = 0
    for n in range(50000):
        replace_queued(queue, latest, "key %d" % n, b"value %d" % n)
        if len(queue) > standing:
            del queue[0]  # written
        largest = max(largest, len(latest))
    assert largest <= 2 * (standing + 1) + FORGET_SLACK
    counter = b"total 1"
    replace_queued(queue, latest, "total", counter)
    assert replace_queued(queue, latest, "total", b"total 2") is counter, "a key still queued is still replaced"
    assert queue.count(counter) == 0 and queue[-1] == b"total 2"


def test_a_polling_sessions_queue_never_forgets_a_key_it_still_holds():
    queue, latest = [], {}
    for n in range(1000):
        replace_queued(queue, latest, "key %d" % (n % 10), b"%d" % n)
    assert len(queue) == len(latest) == 10 and queue == [b"%d" % n for n in range(990, 1000)]
