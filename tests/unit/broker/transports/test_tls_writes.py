"""TLS's write rule, without sockets: a backlog's head is joined, and a retried head only grows."""

from broker.core.conflation import replace_queued
from broker.transports.tls import JOINED, join_head


def test_small_buffers_at_the_head_are_joined_up_to_the_limit():
    backlog = [b"a" * 1000, memoryview(b"b" * 1000), b"c" * JOINED, b"d"]
    head = join_head(backlog)
    assert head == b"a" * 1000 + b"b" * 1000 + b"c" * JOINED
    assert backlog == [head, b"d"]


def test_a_retried_head_keeps_its_bytes_first_and_only_grows():
    backlog = [b"x" * 100]
    first = join_head(backlog)
    assert first is backlog[0]
    backlog.append(b"y" * 100)
    retried = join_head(backlog)
    assert retried.startswith(first) and len(retried) == 200 and backlog == [retried]


def test_a_large_head_is_sent_whole_as_a_view_conflation_cannot_replace():
    large = b"z" * (JOINED + 1)
    backlog = [large, b"after"]
    head = join_head(backlog)
    assert head == large and head is not large and backlog[0] is head
    assert replace_queued(backlog, {"total": large}, "total", b"new") is None
    assert backlog[0] is head


def test_a_lone_counter_value_tls_must_write_again_is_not_replaced_by_the_next():
    """TLS refused the write of the one value queued (a retry must send the same bytes):
    the next value of its key queues behind it instead of taking its place."""
    value, newer = b'a[{"total":999}]', b'a[{"total":1000}]'
    backlog, latest = [value], {"total": value}
    head = join_head(backlog)
    assert head == value and head is not value
    assert replace_queued(backlog, latest, "total", newer) is None
    assert backlog == [value, newer] and backlog[0] is head
