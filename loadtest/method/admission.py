"""Admission control under a burst of connection attempts (``abuse --attacks burst``): what each
answer counts as, how many sessions the broker may let in, the verdict. No I/O, no clock.

Rules (BENCHMARKS.rst, "Hostile clients"):

- An attempt is one new TCP connection opening one session of a kind of :data:`KINDS` in
  turn (:func:`kind_of`). Its answer (:func:`classify`): ``admitted`` (101, or 200),
  ``retry_after`` (503 with whole seconds), ``bare_503``, ``other``; none at all is an
  ``error``, by reason.
- The broker's bucket holds ``max(1, rate)`` tokens and gains ``rate`` a second; ``/info``
  only checks for one, so the other kinds' admissions are at most
  ``rate x window + max(1, rate) + 1`` (:func:`admitted_bound`), the window from the first
  attempt to the last answer.
- :func:`verdict`: every refusal has ``Retry-After``; admissions within the bound; every
  attempt answered 101, 200 or 503; canary p99 during the burst at most twice the quiet one
  or quiet + ``P99_FLOOR_MS``; no canary round trip over ``MAX_RTT_MS`` (the longest bounds
  any stall of the loop); nothing lost; the step covered the last answer. ``passed``: all."""

from loadtest.method import rules

WEBSOCKET, INFO, XHR, XHR_STREAMING = "websocket", "info", "xhr", "xhr_streaming"
KINDS = (WEBSOCKET, INFO, XHR, XHR_STREAMING)
CHECKS_ONLY = (INFO,)  # admitted without taking a token
ADMITTED, RETRY_AFTER, BARE_503, OTHER, ERROR = "admitted", "retry_after", "bare_503", "other", "error"
OUTCOMES = (ADMITTED, RETRY_AFTER, BARE_503, OTHER, ERROR)
REFUSED = "refused"  # both 503s, for the answer times
P99_FACTOR = 2.0
P99_FLOOR_MS = 5.0
MAX_RTT_MS = 50.0


def kind_of(n):
    """The kind of attempt ``n`` (from 0): :data:`KINDS` in turn."""
    return KINDS[n % len(KINDS)]


def classify(kind, status, headers):
    """The outcome of an answer to an attempt of ``kind``: ``status`` and ``headers`` (lowercase names)."""
    if status == (101 if kind == WEBSOCKET else 200):
        return ADMITTED
    if status == 503:
        return RETRY_AFTER if headers.get("retry-after", "").strip().isdigit() else BARE_503
    return OTHER


def admitted_bound(rate, window_s):
    """The most sessions a bucket of ``rate`` a second, full at the start, lets in over ``window_s``."""
    return int(rate * window_s + max(1.0, rate)) + 1


class Tally:
    """The answers to a burst's attempts, as they come: outcomes by kind, errors, statuses, times (microseconds)."""

    def __init__(self):
        self.answers = {kind: dict.fromkeys(OUTCOMES, 0) for kind in KINDS}
        self.errors = {}
        self.other_statuses = {}
        self.retry_after_s = []
        self.answer_us = {ADMITTED: rules.new_histogram(), REFUSED: rules.new_histogram()}

    def answer(self, kind, status, headers, took_us):
        """An answer to an attempt of ``kind``, ``took_us`` after it began; its outcome."""
        outcome = classify(kind, status, headers)
        self.answers[kind][outcome] += 1
        if outcome == RETRY_AFTER:
            self.retry_after_s.append(int(headers["retry-after"]))
        if outcome == OTHER:
            self.other_statuses[str(status)] = self.other_statuses.get(str(status), 0) + 1
        else:
            histogram = self.answer_us[ADMITTED if outcome == ADMITTED else REFUSED]
            histogram.record_value(min(max(1, int(took_us)), rules.RTT_HIGHEST_US))
        return outcome

    def error(self, kind, reason):
        self.answers[kind][ERROR] += 1
        self.errors[reason] = self.errors.get(reason, 0) + 1

    def totals(self):
        return {outcome: sum(row[outcome] for row in self.answers.values()) for outcome in OUTCOMES}

    def sessions_admitted(self):
        """The admitted attempts that took a token: every kind's but ``/info``'s."""
        return sum(row[ADMITTED] for kind, row in self.answers.items() if kind not in CHECKS_ONLY)

    def figures(self):
        """The tally as JSON (``retry_after_s``: None without any)."""
        values = self.retry_after_s
        return {"answers": {kind: dict(row) for kind, row in self.answers.items()}, "totals": self.totals(),
                "sessions_admitted": self.sessions_admitted(), "errors": dict(self.errors),
                "other_statuses": dict(self.other_statuses),
                "retry_after_s": {"min": min(values), "max": max(values)} if values else None,
                "answer_ms": {name: rules.rtt_summary(histogram) for name, histogram in self.answer_us.items()}}


def p99_bound_ms(quiet_p99_ms):
    """The highest p99 the canaries may show during the burst, after ``quiet_p99_ms`` quiet."""
    return max(P99_FACTOR * quiet_p99_ms, quiet_p99_ms + P99_FLOOR_MS)


def verdict(burst, rate, quiet, during, step_s):
    """The checks of the module's rules (a canary step None: not measured, its checks failed)."""
    totals, window_s = burst["totals"], burst["window_s"]
    measured = quiet is not None and during is not None and quiet["p99_ms"] is not None \
        and during["p99_ms"] is not None
    checks = {"retry_after": totals[BARE_503] == 0,
              "within_rate": burst["sessions_admitted"] <= admitted_bound(rate, window_s),
              "answered": totals[OTHER] == 0 and totals[ERROR] == 0,
              "canary_p99": measured and during["p99_ms"] <= p99_bound_ms(quiet["p99_ms"]),
              "no_stall": measured and during["max_ms"] <= MAX_RTT_MS,
              "nothing_lost": measured and not any(step["lost"] or step["dropped"] for step in (quiet, during)),
              "covered": window_s <= step_s}
    checks["passed"] = all(checks.values())
    return checks
