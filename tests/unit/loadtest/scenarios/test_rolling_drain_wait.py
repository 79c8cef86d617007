"""The rolling run's own constants against the broker's."""

from broker.core.drain import MAX_STRETCH
from loadtest.scenarios import rolling


def test_a_restart_waits_for_the_longest_drain():
    assert rolling.DRAIN_STRETCH == MAX_STRETCH, "a broker over its share drains up to MAX_STRETCH times longer"
