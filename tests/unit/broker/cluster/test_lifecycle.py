"""The backplane's read loop as a table, without Redis: every transition, told as the runs
that take it, and every pair the table refuses."""

import itertools

import pytest

from broker.cluster.lifecycle import (TRANSITIONS, Lifecycle, LifecycleAction, LifecycleError, LifecycleEvent,
                                      LifecycleState)

CONNECTING, UP, DOWN, STOPPED = (LifecycleState.CONNECTING, LifecycleState.UP, LifecycleState.DOWN,
                                 LifecycleState.STOPPED)
TRIMMING, FAILING_OVER, FOLLOWING = (LifecycleState.RELOADING_TRIMMED, LifecycleState.RELOADING_FAILOVER,
                                     LifecycleState.RELOADING_EPOCH)
E, A = LifecycleEvent, LifecycleAction
LOADED = [(E.TAIL_LOADED, UP, A.READ)]  # start() loaded the tail: the read loop starts up

# Each run starts connecting; each step is an event, then the state and the action it leads to.
RUNS = {
    "a start, reads, an outage, Redis back with its data, the stop, a report in flight": LOADED + [
        (E.READY, UP, A.READ),
        (E.DELIVERED, UP, A.READ),
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.SAME_EPOCH, UP, A.READ),
        (E.STOPPED, STOPPED, A.STOP),
        (E.EPOCH_SEEN, STOPPED, A.NOTHING),
    ],
    "Redis away at start: the tail is loaded after each pause, whatever epoch a report saw": [
        (E.FAILED, CONNECTING, A.PAUSE),
        (E.READY, CONNECTING, A.LOAD_TAIL),
        (E.EPOCH_SEEN, CONNECTING, A.NOTHING),
        (E.FAILED, CONNECTING, A.PAUSE),
        (E.READY, CONNECTING, A.LOAD_TAIL),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "Redis back without its data: a failure while loading resumes again": LOADED + [
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.EPOCH_CHANGED, DOWN, A.LOAD_TAIL),
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.EPOCH_CHANGED, DOWN, A.LOAD_TAIL),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "entries trimmed unread: the loss outlives a failure and another epoch, until a load": LOADED + [
        (E.TRIMMED, TRIMMING, A.LOAD_TAIL_TELL_EXPIRED),
        (E.EPOCH_SEEN, TRIMMING, A.NOTHING),
        (E.FAILED, TRIMMING, A.PAUSE),
        (E.READY, TRIMMING, A.LOAD_TAIL_TELL_EXPIRED),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "a failover lost the last id: a new epoch, kept through a failure and another epoch": LOADED + [
        (E.FAILOVER, FAILING_OVER, A.NEW_EPOCH),
        (E.FAILED, FAILING_OVER, A.PAUSE),
        (E.EPOCH_SEEN, FAILING_OVER, A.NOTHING),
        (E.READY, FAILING_OVER, A.NEW_EPOCH),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "another broker's epoch seen during a read: what it read is delivered, then the tail loaded": LOADED + [
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.DELIVERED, FOLLOWING, A.LOAD_TAIL),
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.FAILED, FOLLOWING, A.PAUSE),
        (E.READY, FOLLOWING, A.LOAD_TAIL),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "another epoch seen during a read that finds entries trimmed: the trim is told": LOADED + [
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.TRIMMED, TRIMMING, A.LOAD_TAIL_TELL_EXPIRED),
    ],
    "another epoch seen during a read that finds a failover: a new epoch": LOADED + [
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.FAILOVER, FAILING_OVER, A.NEW_EPOCH),
    ],
    "another epoch seen while Redis is away: the tail is loaded, with no resume": LOADED + [
        (E.FAILED, DOWN, A.PAUSE),
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.READY, FOLLOWING, A.LOAD_TAIL),
    ],
    "another epoch seen during a resume that finds the hub's: one read, then the tail": LOADED + [
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.SAME_EPOCH, FOLLOWING, A.READ),
        (E.DELIVERED, FOLLOWING, A.LOAD_TAIL),
    ],
    "another epoch seen during a resume that finds the epoch changed: the tail": LOADED + [
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.EPOCH_CHANGED, FOLLOWING, A.LOAD_TAIL),
        (E.TAIL_LOADED, UP, A.READ),
    ],
    "another epoch seen while loading after Redis came back without its data": LOADED + [
        (E.FAILED, DOWN, A.PAUSE),
        (E.READY, DOWN, A.RESUME),
        (E.EPOCH_CHANGED, DOWN, A.LOAD_TAIL),
        (E.EPOCH_SEEN, FOLLOWING, A.NOTHING),
        (E.FAILED, FOLLOWING, A.PAUSE),
        (E.READY, FOLLOWING, A.LOAD_TAIL),
    ],
}
# The stop, from wherever the loop is.
STOPS = {state: [(E.STOPPED, STOPPED, A.STOP)] for state in LifecycleState if state is not STOPPED}


def taken(steps, state=CONNECTING):
    """The (state, event) pairs ``steps`` take, from ``state``."""
    for event, after, _ in steps:
        yield state, event
        state = after


TAKEN = {pair for steps in RUNS.values() for pair in taken(steps)} | {
    pair for state, steps in STOPS.items() for pair in taken(steps, state)}
REFUSED = sorted(set(itertools.product(LifecycleState, LifecycleEvent)) - TAKEN,
                 key=lambda pair: (pair[0].value, pair[1].value))


def test_a_read_loop_starts_connecting():
    assert Lifecycle().state is CONNECTING


@pytest.mark.parametrize("run", RUNS)
def test_each_run_takes_the_transitions_it_names(run):
    lifecycle = Lifecycle()
    for step, (event, state, action) in enumerate(RUNS[run]):
        assert (lifecycle.handle(event), lifecycle.state) == (action, state), "step %d: %s" % (step, event.value)


@pytest.mark.parametrize("state", STOPS, ids=lambda state: state.value)
def test_the_stop_ends_the_loop_from_every_state(state):
    lifecycle = Lifecycle()
    lifecycle.state = state
    assert lifecycle.handle(E.STOPPED) is A.STOP
    assert lifecycle.state is STOPPED


def test_the_runs_take_every_transition_of_the_table_and_no_other():
    assert TAKEN == set(TRANSITIONS)


def test_every_state_can_take_a_report_of_another_epoch():
    """The report runs beside the read loop, at any moment: it never finds a state that refuses."""
    assert {state for state, event in TRANSITIONS if event is E.EPOCH_SEEN} == set(LifecycleState)


def test_the_read_loop_is_never_told_to_do_nothing():
    """Only the report's epoch asks for nothing (the read loop's action in flight ends first)."""
    assert {event for (_, event), (_, action) in TRANSITIONS.items() if action is A.NOTHING} == {E.EPOCH_SEEN}


@pytest.mark.parametrize("state, event", REFUSED, ids=["%s + %s" % (s.value, e.value) for s, e in REFUSED])
def test_a_pair_the_table_lacks_is_refused_and_changes_nothing(state, event):
    lifecycle = Lifecycle()
    lifecycle.state = state
    with pytest.raises(LifecycleError) as refused:
        lifecycle.handle(event)
    assert str(refused.value) == "the backplane's read loop, %s, cannot take: %s" % (state.value, event.value)
    assert lifecycle.state is state

