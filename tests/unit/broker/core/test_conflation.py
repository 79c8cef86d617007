"""One queued item per conflating key, without a socket."""

from broker.core.conflation import replace_queued, valid_key


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
