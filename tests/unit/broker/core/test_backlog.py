"""A client's backlog alone: the bound, the per-key replacement, the head written away."""

from broker.core.backlog import Backlog


def test_chunks_queue_in_order_and_count_their_size():
    backlog = Backlog()
    assert backlog.offer(b"ab", None, 10) and backlog.offer("cde", None, 10)
    backlog.append(b"f")
    assert (backlog.chunks, backlog.size, len(backlog)) == ([b"ab", "cde", b"f"], 6, 3)


def test_over_the_bound_an_offer_is_refused_and_nothing_queued():
    backlog = Backlog()
    assert backlog.offer(b"x" * 11, None, 10)  # the bound is checked before, as a socket falls behind by a frame
    assert not backlog.offer(b"y", None, 10)
    assert (backlog.chunks, backlog.size) == ([b"x" * 11], 11)


def test_a_keyed_chunk_is_held_to_twice_the_bound():
    backlog = Backlog()
    backlog.append(b"x" * 15)
    assert not backlog.offer(b"y", None, 10)
    assert backlog.offer(b"t", "total", 10)
    backlog.append(b"x" * 10)
    assert not backlog.offer(b"u", "total", 10)
    assert backlog.size == 26


def test_appending_ignores_the_bound():
    backlog = Backlog()
    backlog.append(b"x" * 100)
    backlog.append(b"closing")
    assert backlog.size == 107


def test_a_keyed_chunk_replaces_the_one_queued_under_its_key_and_goes_last():
    backlog = Backlog()
    first, second = b"t1", b"t22"
    backlog.offer(first, "total", 100)
    backlog.offer(b"a", None, 100)
    backlog.offer(second, "total", 100)
    assert backlog.chunks == [b"a", second] and backlog.chunks[1] is second
    assert backlog.size == 4


def test_texts_of_a_key_are_told_apart_even_where_the_interpreter_shares_them():
    backlog = Backlog()
    backlog.offer("1", None, 100)
    backlog.offer("1", "total", 100)
    backlog.offer("2", "total", 100)
    assert backlog.chunks == ["1", "2"] and backlog.size == 2


def test_written_bytes_leave_from_the_head_and_a_partly_written_chunk_stays_as_its_rest():
    backlog = Backlog()
    for chunk in (b"abc", b"def", b"gh"):
        backlog.append(chunk)
    backlog.written(4)
    assert [bytes(chunk) for chunk in backlog.chunks] == [b"ef", b"gh"] and backlog.size == 4
    backlog.written(0)
    assert backlog.size == 4 and len(backlog) == 2
    backlog.written(4)
    assert (backlog.chunks, backlog.size) == ([], 0)


def test_a_partly_written_keyed_chunk_is_no_longer_replaced():
    backlog = Backlog()
    backlog.offer(b"t1", "total", 100)
    backlog.written(1)
    backlog.offer(b"t2", "total", 100)
    assert [bytes(chunk) for chunk in backlog.chunks] == [b"1", b"t2"] and backlog.size == 3


def test_taking_all_empties_it_and_forgets_the_keys():
    backlog = Backlog()
    backlog.offer("a", None, 100)
    backlog.offer("t1", "total", 100)
    assert backlog.take_all() == ["a", "t1"]
    assert (backlog.chunks, backlog.size) == ([], 0)
    backlog.offer("t2", "total", 100)
    backlog.offer("b", None, 100)
    assert backlog.chunks == ["t2", "b"]
