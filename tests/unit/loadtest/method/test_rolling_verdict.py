"""A rolling restart judged, without sockets: losses, the peak of new sessions, the p99 during the restarts."""

import collections

from loadtest.method import rolling_verdict
from loadtest.method.rolling_verdict import Load, Losses
from loadtest.method.timeline import Second

NONE_LOST = Losses(0, 0, 0)


def run(new_sessions, late_ms, steady_ms=10):
    """Rows and lateness of a run of 3 brokers: seconds 0-4 steady, then one second per item
    of ``new_sessions`` (its new sessions at each broker) with ``late_ms`` lateness."""
    rows, lateness = [], {}
    for second in range(5 + len(new_sessions)):
        during = second >= 5
        ms = late_ms if during else steady_ms
        lateness[second] = collections.Counter({ms * 1000: 100})
        new = new_sessions[second - 5] if during else (0, 0, 0)
        rows.append(Second(second, (100, 100, 100), new, 100, ms, ms, ms))
    return rows, lateness, (5, 4 + len(new_sessions))


def test_the_restarts_run_from_the_first_sigterm_to_the_clients_wait_after_the_last_healthy():
    assert rolling_verdict.restart_seconds(10.4, 40.2, 1.0) == (10, 41)
    assert rolling_verdict.restart_seconds(3.0, 3.0, 0.0) == (3, 3)


def test_a_drain_that_spreads_and_stays_on_time_passes():
    rows, lateness, window = run([(0, 40, 40), (0, 44, 30)], late_ms=19)
    verdict = rolling_verdict.judge(rows, lateness, window, Load(900, 3, 10.0), NONE_LOST)
    assert verdict.passed, verdict.failures
    assert (verdict.peak_new_sessions, verdict.peak_second, verdict.peak_broker) == (44, 6, 1)
    assert (verdict.new_sessions_bound, verdict.steady_p99_ms, verdict.restart_p99_ms, verdict.p99_bound_ms) == (
        45.0, 10.0, 19.0, 20.0)


def test_a_peak_above_the_spread_or_a_slow_restart_fails():
    rows, lateness, window = run([(0, 46, 0)], late_ms=21)
    verdict = rolling_verdict.judge(rows, lateness, window, Load(900, 3, 10.0), NONE_LOST)
    assert verdict.failures == ("46 new sessions in second 5 at broker 2, over 45",
                                "p99 21.0 ms during the restarts, over 20.0 (2x the steady 10.0)")
    assert verdict.worst_second_p99_ms == 21.0


def test_losses_fail_every_run_and_without_a_drain_nothing_else_is_judged():
    rows, lateness, window = run([(0, 5000, 0)], late_ms=900)
    verdict = rolling_verdict.judge(rows, lateness, window, Load(300, 3, 0.0), Losses(2, 1, 0))
    assert verdict.failures == ("2 messages lost", "1 message delivered twice")
    assert (verdict.new_sessions_bound, verdict.p99_bound_ms, verdict.peak_new_sessions) == (None, None, 5000)
    assert rolling_verdict.judge(rows, lateness, window, Load(300, 3, 0.0), NONE_LOST).passed


def test_a_drain_with_no_steady_second_cannot_be_judged():
    rows, lateness, _ = run([(0, 1, 0)], late_ms=5)
    verdict = rolling_verdict.judge(rows, lateness, (0, 5), Load(900, 3, 10.0), NONE_LOST)
    assert verdict.failures == ("no delivery before the restarts to compare",)


def test_a_crash_judges_the_uncut_clients_p99_not_the_cut_ones():
    """The cut clients get what they missed seconds late; the others must keep their lateness."""
    rows, lateness, window = run([(0, 2000, 0)], late_ms=900)
    uncut = {second: collections.Counter({ms * 1000: 50}) for second, ms in ((5, 15), (6, 15))}
    verdict = rolling_verdict.judge(rows, lateness, window, Load(300, 3, 0.0, killed=True), NONE_LOST, uncut)
    assert verdict.passed, verdict.failures
    assert (verdict.restart_p99_ms, verdict.uncut_p99_ms, verdict.p99_bound_ms) == (900.0, 15.0, 20.0)
    uncut[5][25000] = 2
    verdict = rolling_verdict.judge(rows, lateness, window, Load(300, 3, 0.0, killed=True), NONE_LOST, uncut)
    assert verdict.failures == ("p99 25.0 ms of the uncut clients during the restarts, over 20.0 (2x the steady 10.0)",)
    # Not a crash: shown, not judged.
    verdict = rolling_verdict.judge(rows, lateness, window, Load(300, 3, 0.0), NONE_LOST, uncut)
    assert verdict.passed and verdict.uncut_p99_ms == 25.0


def test_a_run_that_restarted_nothing_is_steady_throughout_and_judged_by_its_losses():
    rows, lateness, _ = run([(0, 900, 0)], late_ms=50)
    verdict = rolling_verdict.judge(rows, lateness, None, Load(300, 3, 10.0), NONE_LOST)
    assert verdict.passed, verdict.failures
    assert (verdict.steady_p99_ms, verdict.restart_p99_ms, verdict.peak_new_sessions) == (50.0, None, 0)
    verdict = rolling_verdict.judge(rows, lateness, None, Load(300, 3, 10.0), Losses(1, 0, 0))
    assert verdict.failures == ("1 message lost",)
