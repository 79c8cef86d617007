"""Each stream's response limit, drawn: streams opened together do not reopen together."""

from broker.transports.streams import drawn_limit


def test_a_limit_is_drawn_between_half_and_all_of_the_setting():
    assert drawn_limit(131072, lambda: 0.0) == 65536
    assert drawn_limit(131072, lambda: 0.999999) == 131071
    assert len({drawn_limit(131072) for _ in range(100)}) > 50
