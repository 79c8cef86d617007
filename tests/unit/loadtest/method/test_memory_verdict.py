"""The soak's arithmetic: growth after the warm-up and the flat verdict, without a server."""

import pytest

from loadtest.method import memory_verdict


def series(*points):
    """Readings ``(elapsed_s, rss_kb)``, as a soak takes them from its samples."""
    return list(points)


def test_growth_is_measured_from_the_first_reading_after_the_warm_up():
    samples = series((30, 40000), (60, 100 * 1024), (1860, 110 * 1024))
    figures = memory_verdict.growth(samples, warmup_s=60)
    assert figures["rss_after_warmup_kb"] == 100 * 1024 and figures["warmup_at_s"] == 60
    assert figures["final_rss_kb"] == 110 * 1024 and figures["final_at_s"] == 1860
    assert figures["growth_mb"] == 10.0
    assert figures["growth_mb_per_h"] == 20.0  # 10 MB in half an hour
    assert figures["growth_pct"] == 10.0


def test_a_reading_between_samples_counts_from_the_first_one_past_the_warm_up():
    figures = memory_verdict.growth(series((55, 1000), (65, 2000), (3665, 2000)), warmup_s=60)
    assert (figures["warmup_at_s"], figures["rss_after_warmup_kb"]) == (65, 2000)
    assert figures["growth_mb_per_h"] == 0.0


@pytest.mark.parametrize("reference_mb, final_mb, verdict", [
    (100, 120, "flat"),       # 20 MB: the floor of the tolerance
    (100, 120.1, "growing"),
    (300, 330, "flat"),       # 10 % of 300 MB is more than 20 MB
    (300, 330.5, "growing"),
    (300, 150, "flat"),       # shrinking is not a leak
])
def test_flat_means_within_ten_percent_or_twenty_mb_whichever_is_larger(reference_mb, final_mb, verdict):
    assert memory_verdict.verdict(reference_mb * 1024, final_mb * 1024) == verdict
    samples = series((60, reference_mb * 1024), (600, final_mb * 1024))
    assert memory_verdict.growth(samples, 60)["verdict"] == verdict


def test_the_tolerance_is_the_larger_of_the_two_bounds():
    assert memory_verdict.tolerance_kb(50 * 1024) == 20 * 1024
    assert memory_verdict.tolerance_kb(500 * 1024) == 50 * 1024


def test_without_two_readings_after_the_warm_up_there_is_no_verdict():
    only_warmup = memory_verdict.growth(series((1, 5000), (2, 6000)), warmup_s=60)
    assert only_warmup["final_rss_kb"] == 6000
    assert only_warmup["rss_after_warmup_kb"] is None and only_warmup["verdict"] is None
    one_after = memory_verdict.growth(series((30, 5000), (60, 6000)), warmup_s=60)
    assert one_after["rss_after_warmup_kb"] == 6000 and one_after["verdict"] is None
    assert memory_verdict.growth([], 60)["final_rss_kb"] is None


def test_readings_without_an_rss_are_left_out():
    samples = series((60, 1000), (120, None), (180, 1000))
    figures = memory_verdict.growth(samples, 60)
    assert (figures["final_at_s"], figures["verdict"]) == (180, "flat")
