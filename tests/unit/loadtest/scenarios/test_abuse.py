"""python -m loadtest abuse: its arithmetic and its command line, without a broker."""

import pytest

from loadtest import command_line
from loadtest.scenarios import abuse


def test_cuts_are_timed_from_falling_behind_client_by_client():
    # (time, fallen behind so far, cut so far): two fall behind at 1 s, one more at 2 s.
    samples = [(0.5, 0, 0), (1.0, 2, 0), (2.0, 3, 0), (6.0, 3, 2), (7.5, 3, 3)]
    assert abuse.cut_delays(samples) == [5.0, 5.0, 5.5]
    assert abuse.cut_delays([]) == []


@pytest.mark.parametrize("text", ["", "flood,nonsense"])
def test_unknown_attacks_are_refused(text):
    with pytest.raises(SystemExit):
        command_line.build_parser().parse_args(["abuse", "--attacks", text])


def test_more_burst_canaries_than_the_accept_rate_admits_at_once_are_refused():
    args = command_line.build_parser().parse_args(["abuse", "--attacks", "flood,burst", "--accept-rate", "20",
                                                   "--canaries", "21"])
    with pytest.raises(SystemExit) as refused:
        abuse.check_arguments(args.parser, args)
    assert refused.value.code == 2


def test_the_attacks_run_by_default_are_all_three():
    args = command_line.build_parser().parse_args(["abuse"])
    assert args.attacks == ["flood", "stalled", "burst"]
    assert (args.burst, args.burst_seconds, args.accept_rate) == (5000, 1.0, 500.0)
