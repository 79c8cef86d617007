"""How ``rooms`` spreads its viewers: the skews, each viewer's distinct rooms, the same every time."""

import pytest

from loadtest.method import skew


@pytest.mark.parametrize("text", ["uniform", "zipf:1.1", "hot:0.5", "zipf:0.7", "hot:0.9"])
def test_a_skew_reads_and_says_itself_as_written(text):
    assert str(skew.parse(text)) == text


@pytest.mark.parametrize("text", ["", "zipf", "zipf:0", "zipf:-1", "zipf:inf", "zipf:nan", "hot:1", "hot:0",
                                  "hot:x", "uniform:2", "pareto:1"])
def test_a_skew_outside_the_rule_is_refused_saying_the_rule(text):
    with pytest.raises(ValueError, match="uniform, zipf:S"):
        skew.parse(text)


def test_uniform_gives_every_room_the_same_viewers_and_the_remainder_to_the_first():
    assert skew.audiences(skew.spread(skew.parse("uniform"), 4, 10), 4) == [3, 3, 2, 2]


def test_hot_gives_room_0_its_share_and_the_tail_the_rest_evenly():
    assert skew.audiences(skew.spread(skew.parse("hot:0.5"), 11, 200), 11) == [100] + [10] * 10


def test_zipf_falls_with_the_rank_and_room_0_is_the_busiest():
    audiences = skew.audiences(skew.spread(skew.parse("zipf:1.1"), 100, 10000), 100)
    assert sum(audiences) == 10000
    assert audiences == sorted(audiences, reverse=True) and audiences[0] > 5 * audiences[9] > 0


@pytest.mark.parametrize("text", ["uniform", "zipf:2", "hot:0.9"])
def test_a_viewer_of_several_rooms_has_distinct_ones_and_no_room_more_viewers_than_there_are(text):
    spread = skew.spread(skew.parse(text), 7, 30, 5)
    assert len(spread) == 30 and all(len(set(rooms)) == 5 for rooms in spread)
    audiences = skew.audiences(spread, 7)
    assert sum(audiences) == 150 and max(audiences) <= 30
    assert spread == skew.spread(skew.parse(text), 7, 30, 5)


def test_a_room_may_have_no_viewer_and_a_viewer_cannot_join_more_rooms_than_there_are():
    assert skew.audiences(skew.spread(skew.parse("hot:0.5"), 10, 2), 10) == [1, 1] + [0] * 8
    with pytest.raises(ValueError):
        skew.spread(skew.parse("uniform"), 3, 10, 4)


def test_shares_are_capped_and_their_excess_goes_to_the_others():
    assert skew.shares([0.9, 0.05, 0.05], 10, 5) == [5, 3, 2]
