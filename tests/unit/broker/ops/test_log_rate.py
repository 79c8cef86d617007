import logging

from broker.ops.log_rate import KINDS, LineRate


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def record(msg, *args):
    return logging.LogRecord("tornado.access", logging.WARNING, __file__, 1, msg, args, None)


def test_a_kind_of_line_writes_its_burst_then_one_line_a_period_over_burst():
    clock = Clock()
    line_rate = LineRate(burst=3, period=30.0, clock=clock)
    passed = [line_rate.filter(record("500 %s", n)) for n in range(100)]
    assert passed.count(True) == 3
    clock.now = 10.0  # one line's worth of tokens
    assert line_rate.filter(record("500 %s", "late"))
    assert not line_rate.filter(record("500 %s", "later"))


def test_the_next_line_written_says_how_many_were_held_back():
    clock = Clock()
    line_rate = LineRate(burst=1, period=10.0, clock=clock)
    assert line_rate.filter(record("500 %s", 0))
    clock.now = 1.0
    for n in range(41):
        assert not line_rate.filter(record("500 %s", n))
    clock.now = 11.0
    last = record("500 %s", "last")
    assert line_rate.filter(last)
    assert last.getMessage() == "500 last [41 more like this not logged in the last 10 s]"
    clock.now = 21.0
    assert record("500 %s", "quiet").getMessage() == "500 quiet"
    assert line_rate.filter(record("500 %s", "quiet"))


def test_kinds_are_counted_apart_and_remembered_up_to_a_bound():
    line_rate = LineRate(burst=1, period=60.0, clock=Clock())
    assert line_rate.filter(record("a %s", 1)) and line_rate.filter(record("b %s", 1))
    assert not line_rate.filter(record("a %s", 2))
    for n in range(KINDS + 5):
        line_rate.filter(record("kind %d" % n))
    assert len(line_rate._kinds) <= KINDS
    assert line_rate.filter(record(ValueError("not a string")))
