"""Figures: a part states each once, and its /stats entry is made from them."""

import pytest

from broker.core.figures import COUNTER, GAUGE, Figure, Metric, document, stats_of, through


class Counted:
    def __init__(self):
        self.seen = 3
        self.inner = type("Inner", (), {"depth": 7})()

    FIGURES = (
        Figure("seen", "seen", Metric("seen", COUNTER, "Things seen")),
        Figure("nested.depth", "inner.depth"),
        Figure(None, lambda part: part.seen * 2, Metric("doubled", GAUGE, "Twice the things seen")),
        Figure("absent", lambda part: None, optional=True),
        Figure("unknown", lambda part: None),
    )


def test_a_part_entry_nests_dotted_keys_and_leaves_out_metric_only_and_optional_none():
    assert stats_of(Counted()) == {"seen": 3, "nested": {"depth": 7}, "unknown": None}


def test_the_document_merges_parts_at_the_top_or_puts_them_at_their_place():
    part = Counted()
    assert document([("", part), ("again", part)]) == {"seen": 3, "nested": {"depth": 7}, "unknown": None,
                                                       "again": {"seen": 3, "nested": {"depth": 7},
                                                                 "unknown": None}}


def test_figures_through_an_attribute_read_the_part_held_there():
    holder = type("Holder", (), {"FIGURES": through("held", Counted.FIGURES)})()
    holder.held = Counted()
    holder.held.seen = 5
    assert stats_of(holder)["seen"] == 5


def test_a_figure_needs_a_side_and_labels_that_fit_its_metric():
    with pytest.raises(ValueError):
        Figure(None, "seen")
    reasons = Metric("cuts", COUNTER, "Cuts", ("reason", "transport"))
    with pytest.raises(ValueError):
        Figure("cuts", "cuts", reasons)
    Figure("cuts", "cuts", reasons, ("slow",))
    with pytest.raises(ValueError):
        Metric("odd", "summary", "No such kind")
