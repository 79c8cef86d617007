"""python -m loadtest abuse: the two attacks against a real broker, briefly."""

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
