"""The listener's request timeouts, on fake streams and a given clock."""

from broker.transports.listener import Peer
from broker.transports.request_timeouts import RequestTimeouts


class Stream:
    def __init__(self, reading=True, writing=False):
        self.closed = False
        self.is_reading = reading
        self.is_writing = writing
        self.peer = Peer(("127.0.0.1", 40000), "127.0.0.1")

    def reading(self):
        return self.is_reading

    def writing(self):
        return self.is_writing

    def close(self):
        self.closed = True


def test_headers_not_complete_within_the_timeout_close_their_stream(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("time.monotonic", lambda: clock[0])
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    slow, quick, later = Stream(), Stream(), Stream()
    timeouts.reading_headers(slow)
    timeouts.reading_headers(quick)
    clock[0] = 101.0
    timeouts.reading_headers(later)
    timeouts.headers_read(quick)
    timeouts.sweep(101.9)
    assert not slow.closed
    timeouts.sweep(102.1)
    assert slow.closed and not quick.closed and not later.closed
    timeouts.sweep(103.1)
    assert later.closed
    assert not timeouts.headers


def test_a_new_request_restarts_the_header_deadline(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("time.monotonic", lambda: clock[0])
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    first, idle = Stream(), Stream()
    timeouts.reading_headers(idle)
    timeouts.reading_headers(first)
    clock[0] = 1.5
    timeouts.headers_read(idle)
    timeouts.reading_headers(idle)  # its next request, on the same connection
    timeouts.sweep(2.5)
    assert first.closed and not idle.closed
    timeouts.sweep(3.6)
    assert idle.closed


def test_a_body_is_timed_only_while_it_is_being_read(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("time.monotonic", lambda: clock[0])
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    dripping, answered, next_request = Stream(), Stream(reading=False), Stream()
    for stream in (dripping, answered, next_request):
        timeouts.reading_body(stream)
    clock[0] = 4.0
    timeouts.reading_body(dripping)  # a later chunk: the deadline stays the first read's
    timeouts.reading_headers(next_request)  # the body was read: the next request's headers are timed
    timeouts.sweep(5.5)
    assert dripping.closed and not answered.closed and not next_request.closed
    assert not timeouts.bodies


def test_a_closed_stream_is_forgotten():
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0, write_timeout=1.0)
    stream = Stream()
    timeouts.reading_headers(stream)
    timeouts.reading_body(stream)
    timeouts.falling_behind(stream)
    timeouts.forget(stream)
    assert not timeouts.headers and not timeouts.bodies and not timeouts.writes


def test_a_write_not_taken_within_the_write_timeout_closes_its_stream(monkeypatch):
    clock = [0.0]
    monkeypatch.setattr("time.monotonic", lambda: clock[0])
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0, write_timeout=1.0)
    stuck, caught_up, again = Stream(writing=True), Stream(writing=True), Stream(writing=True)
    for stream in (stuck, caught_up, again):
        timeouts.falling_behind(stream)
    clock[0] = 0.8
    caught_up.is_writing = False
    timeouts.falling_behind(again)  # caught up meanwhile, and behind again: a deadline from now
    timeouts.reading_headers(stuck)  # a head being read does not forget the bytes before it
    timeouts.sweep(1.1)
    assert stuck.closed and not caught_up.closed and not again.closed
    timeouts.sweep(1.9)
    assert again.closed and not timeouts.writes


def test_without_a_write_timeout_writes_are_untimed():
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    stream = Stream(writing=True)
    timeouts.falling_behind(stream)
    timeouts.sweep(1000.0)
    assert not stream.closed and not timeouts.writes


def test_a_carried_head_deadline_is_kept_behind_later_entries():
    """A head deadline carried from a kept connection falls before the deadlines noted
    earlier: it is swept at its time, not when theirs are due."""
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    earlier, carried = Stream(), Stream()
    timeouts.headers[earlier] = 10.0
    timeouts.reading_headers(carried, 9.0)
    assert timeouts.deadline(carried) == 9.0 and timeouts.deadline(earlier) == 10.0
    timeouts.sweep(9.5)
    assert carried.closed and not earlier.closed
    assert timeouts.deadline(carried) is None


def test_a_carried_head_deadline_ends_with_its_head():
    timeouts = RequestTimeouts(header_timeout=2.0, body_timeout=5.0)
    read, closed = Stream(), Stream()
    timeouts.reading_headers(read, 9.0)
    timeouts.reading_headers(closed, 9.0)
    timeouts.headers_read(read)
    timeouts.forget(closed)
    timeouts.sweep(10.0)
    assert not read.closed and not closed.closed and not timeouts.carried
