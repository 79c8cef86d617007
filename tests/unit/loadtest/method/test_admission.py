"""The burst's arithmetic: what each answer counts as, how many sessions may be let in, the verdict."""

import pytest

from loadtest.method import admission

QUIET = {"p99_ms": 2.0, "max_ms": 3.0, "lost": 0, "dropped": 0}


def during(**changes):
    return dict({"p99_ms": 4.0, "max_ms": 20.0, "lost": 0, "dropped": 0}, **changes)


def test_attempts_take_each_kind_in_turn():
    assert [admission.kind_of(n) for n in range(6)] == ["websocket", "info", "xhr", "xhr_streaming",
                                                        "websocket", "info"]


@pytest.mark.parametrize("kind, status, headers, outcome", [
    ("websocket", 101, {}, "admitted"),
    ("websocket", 200, {}, "other"),        # a handshake answered 200 did not upgrade
    ("info", 200, {}, "admitted"),
    ("xhr", 200, {}, "admitted"),
    ("xhr_streaming", 503, {"retry-after": "1"}, "retry_after"),
    ("xhr", 503, {"retry-after": " 12 "}, "retry_after"),
    ("info", 503, {}, "bare_503"),
    ("websocket", 503, {"retry-after": ""}, "bare_503"),
    ("xhr", 503, {"retry-after": "soon"}, "bare_503"),
    ("xhr", 404, {}, "other"),
])
def test_answers_are_classified(kind, status, headers, outcome):
    assert admission.classify(kind, status, headers) == outcome


def test_the_bound_is_the_full_bucket_and_the_refill_over_the_window():
    assert admission.admitted_bound(500, 1.0) == 500 + 500 + 1
    assert admission.admitted_bound(500, 1.25) == 625 + 500 + 1
    assert admission.admitted_bound(0.5, 2.0) == 1 + 1 + 1  # a bucket holds one token at least


def test_a_tally_counts_by_kind_and_only_sessions_against_the_bound():
    tally = admission.Tally()
    tally.answer("websocket", 101, {}, 500)
    tally.answer("info", 200, {}, 300)
    tally.answer("info", 503, {"retry-after": "1"}, 200)
    tally.answer("xhr", 503, {"retry-after": "3"}, 250)
    tally.answer("xhr_streaming", 500, {}, 900)
    tally.error("xhr", "refused")
    tally.error("websocket", "refused")
    figures = tally.figures()
    assert figures["answers"]["info"] == {"admitted": 1, "retry_after": 1, "bare_503": 0, "other": 0, "error": 0}
    assert figures["totals"] == {"admitted": 2, "retry_after": 2, "bare_503": 0, "other": 1, "error": 2}
    assert figures["sessions_admitted"] == 1  # /info takes no token
    assert figures["errors"] == {"refused": 2}
    assert figures["other_statuses"] == {"500": 1}
    assert figures["retry_after_s"] == {"min": 1, "max": 3}
    assert figures["answer_ms"]["admitted"]["max"] == pytest.approx(0.5, rel=0.01)
    assert figures["answer_ms"]["refused"]["p50"] == pytest.approx(0.2, rel=0.01)


def test_an_empty_tally_has_no_times_and_no_retry_after():
    figures = admission.Tally().figures()
    assert figures["retry_after_s"] is None and figures["answer_ms"]["refused"]["p99"] is None
    assert figures["totals"] == dict.fromkeys(admission.OUTCOMES, 0)


def totals(**changes):
    return dict(dict.fromkeys(admission.OUTCOMES, 0), admitted=600, retry_after=4400, **changes)


def burst(totals, sessions_admitted, window_s):
    return {"totals": totals, "sessions_admitted": sessions_admitted, "window_s": window_s}


def test_a_burst_held_to_the_rate_passes():
    checks = admission.verdict(burst(totals(), 450, 1.0), 500, QUIET, during(), 3.0)
    assert checks == {"retry_after": True, "within_rate": True, "answered": True, "canary_p99": True,
                      "no_stall": True, "nothing_lost": True, "covered": True, "passed": True}


@pytest.mark.parametrize("failing, arguments", [
    ("retry_after", dict(totals=totals(bare_503=1))),
    ("within_rate", dict(sessions_admitted=1002)),
    ("answered", dict(totals=totals(error=1))),
    ("answered", dict(totals=totals(other=1))),
    ("canary_p99", dict(during=during(p99_ms=7.5))),        # 2 ms quiet: the 5 ms floor, 7 ms
    ("no_stall", dict(during=during(max_ms=50.5))),
    ("nothing_lost", dict(during=during(lost=1))),
    ("nothing_lost", dict(quiet=dict(QUIET, dropped=1))),
    ("covered", dict(step_s=0.9)),                           # answered after the canaries' step
])
def test_each_check_fails_alone(failing, arguments):
    given = dict(totals=totals(), sessions_admitted=1001, rate=500, window_s=1.0, quiet=QUIET, during=during(),
                 step_s=3.0)
    given.update(arguments)
    checks = admission.verdict(burst(given["totals"], given["sessions_admitted"], given["window_s"]), given["rate"],
                               given["quiet"], given["during"], given["step_s"])
    assert [name for name, passed in checks.items() if not passed] == [failing, "passed"]


def test_the_canaries_p99_may_double_above_the_floor():
    assert admission.p99_bound_ms(2.0) == 7.0
    assert admission.p99_bound_ms(10.0) == 20.0
    quiet = dict(QUIET, p99_ms=10.0)
    assert admission.verdict(burst(totals(), 0, 1.0), 500, quiet, during(p99_ms=20.0), 3.0)["canary_p99"]
    assert not admission.verdict(burst(totals(), 0, 1.0), 500, quiet, during(p99_ms=20.1), 3.0)["canary_p99"]


def test_canaries_not_measured_fail_their_checks():
    checks = admission.verdict(burst(totals(), 0, 1.0), 500, QUIET, None, 3.0)
    assert not (checks["canary_p99"] or checks["no_stall"] or checks["nothing_lost"] or checks["passed"])
    assert checks["retry_after"] and checks["within_rate"]
