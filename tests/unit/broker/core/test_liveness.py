"""Liveness: a lag of the loop, or a round trip gone missing, makes the broker unhealthy for as
long as the rules say, and no longer."""

from broker.core.liveness import LAG_BOUND_S, LAG_WINDOW_S, ROUND_TRIP_BOUND_S, TICK_S, Liveness


def test_a_loop_on_time_is_healthy_and_a_lag_past_the_bound_is_not_for_its_window():
    liveness = Liveness(100.0)
    liveness.ticked(0.01, 100.25)
    assert liveness.lagging(100.3) is None and liveness.lag_s == 0.01
    liveness.ticked(LAG_BOUND_S - 0.1, 103.0)
    assert liveness.lagging(103.0) is None
    liveness.ticked(LAG_BOUND_S + 1, 106.0)
    assert "lagged by 3.0 s" in liveness.lagging(106.1)
    liveness.ticked(0.0, 106.0 + LAG_WINDOW_S)
    assert liveness.lagging(106.0 + LAG_WINDOW_S) is not None
    liveness.ticked(0.0, 106.1 + LAG_WINDOW_S)
    assert liveness.lagging(106.1 + LAG_WINDOW_S) is None


def test_a_tick_already_late_past_the_bound_is_a_lag_before_it_runs():
    """A request answered in the loop iteration that ends a stall sees the stall."""
    liveness = Liveness(100.0)
    liveness.ticked(0.0, 100.0)
    assert liveness.lagging(100.0 + TICK_S + LAG_BOUND_S) is None
    assert "is 2.5 s late" in liveness.lagging(100.0 + TICK_S + LAG_BOUND_S + 0.5)


def test_a_broker_alone_has_no_round_trip_to_wait_for():
    liveness = Liveness(100.0)
    liveness.ticked(0.0, 1000.0)
    assert liveness.round_trip_age(1000.0) is None and liveness.stalled(1000.0) is None


def test_a_cluster_s_round_trip_older_than_its_bound_is_a_problem_until_one_comes_back():
    liveness = Liveness(100.0, round_trips=True)
    liveness.ticked(0.0, 100.0 + ROUND_TRIP_BOUND_S)
    assert liveness.stalled(100.0 + ROUND_TRIP_BOUND_S) is None, "the bound from the start"
    liveness.ticked(0.0, 101.0 + ROUND_TRIP_BOUND_S)
    assert "came back" in liveness.stalled(101.0 + ROUND_TRIP_BOUND_S)
    liveness.came_back(101.0 + ROUND_TRIP_BOUND_S)
    assert liveness.stalled(101.0 + ROUND_TRIP_BOUND_S) is None
    assert liveness.round_trip_age(103.0 + ROUND_TRIP_BOUND_S) == 2.0
