"""TLS's write rule, without sockets: a backlog's head is joined, and a retried head only grows."""

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


def test_a_large_head_is_sent_as_it_is():
    large = memoryview(b"z" * (JOINED + 1))
    backlog = [large, b"after"]
    assert join_head(backlog) is large
    assert len(backlog) == 2
