from broker.core.pending import Pending


def test_a_flush_takes_everything_in_order_with_the_next_offsets_and_the_first_ones_time():
    pending, reads = Pending(), []

    def clock():
        reads.append(len(reads))
        return 5.0

    assert pending.add('"a"', b"a", None, clock)  # the first: the flush is to be asked for
    assert not pending.add('"b"', b"b", None, clock)
    assert pending.next_offset() == "2" and reads == [0]
    batch, keys = pending.take()
    assert (batch.encoded, list(batch.offsets), keys, pending.oldest) == (['"a"', '"b"'], [1, 2], None, 5.0)
    assert pending.take() is None
    assert pending.add('"c"', b"c", None, clock)
    assert list(pending.take()[0].offsets) == [3]


def test_keys_are_kept_only_once_a_message_has_one():
    pending = Pending()
    pending.add('"a"', b"a", None, lambda: 0.0)
    pending.add('"b"', b"b", "total", lambda: 0.0)
    assert pending.take()[1] == [None, "total"]
