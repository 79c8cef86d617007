"""What a person sees: the status line while a sweep or a soak runs, a sweep's header and summary, a feed's lines.

Rules: a sweep says before it starts what it will run, against what, for how long at most and
where its results go; at the end, or on Ctrl-C, what it found, from the records it wrote. What
stopped a level is said as a sentence, the client's limit with what to do about it.
"""

import sys
import time

from loadtest.method.rules import REALTIME_MS, End
from loadtest.results import summary

REFRESH_S = 0.1
CLIENT_LIMIT = "the load client, not the server, is the limit here: spread it with --procs or another machine"
SERVER_UNKNOWN = ("unknown: give --server-pid (no process of this user was found listening where --url "
                  "points)")
PLOT = "python -m plots %s"


def level_end_line(end):
    """What stopped a level, its ``end`` text (:class:`loadtest.method.rules.End`) as a person reads it."""
    kind, detail = End.of(end), end.partition(": ")[2]
    if kind is End.CLIENT_BOUND:
        return "%s; client-bound %s" % (CLIENT_LIMIT, detail)
    if kind is End.OVERLOADED:
        return "the server is overloaded: %s" % detail
    if kind is End.INTERRUPTED:
        return "interrupted (Ctrl-C); the steps measured are kept"
    return end


def sweep_header(url, schedules, step_s, server, out_path):
    """The lines a sweep prints before it starts; ``schedules``: ``(level, rates)`` of each level in turn."""
    rates = sorted({tuple(rates) for _, rates in schedules})
    most = sum(len(rates) for _, rates in schedules)
    if len(rates) == 1 and len(rates[0]) == 1:
        offered = "%s msgs/s" % _num(rates[0][0])
    else:
        offered = "%s to %s msgs/s" % (_num(min(r[0] for r in rates)), _num(max(r[-1] for r in rates)))
    return "\n".join([
        "sweeping %s: %s clients, %s, %g s a step with its pause" % (
            url, ", ".join(str(level) for level, _ in schedules), offered, step_s),
        "at most %d steps, %s and the connecting; it stops sooner where the server is overloaded or the "
        "client is the limit" % (most, _clock(most * step_s)),
        "server CPU and RSS: %s" % server,
        "results: %s, step by step (Ctrl-C stops and keeps every step measured)" % out_path,
    ])


def sweep_progress(done, most, step_s):
    """Where a sweep is: ``done`` steps measured of ``most`` at most, each ``step_s`` with its pause."""
    return "step %d of at most %d, at most %s left" % (done, most, _clock((most - done) * step_s))


def sweep_summary(records, out_path):
    """What a sweep found, per level: its knee, round trips at a few rates, the server's cost, what stopped it."""
    results = summary.Results(records)
    lines = []
    for knee in summary.realtime_capacity(results):
        key = (knee.server, knee.transport, knee.level)
        steps = [step for step in results.steps if (step.server, step.transport, step.level) == key]
        at = next((step for step in steps if step.rate == knee.rate), None)
        lines.append("%d clients, %d steps:" % (knee.level, len(steps)))
        if at is None:
            lines.append("  no step within realtime (mean round trip <= %.0f ms)" % REALTIME_MS)
        else:
            lines.append("  knee: %s deliveries/s within realtime (mean round trip <= %.0f ms), at %s msgs/s "
                         "sent; %s" % (_num(knee.msgs_per_s), REALTIME_MS, _num(knee.rate), (
                             "past it the server falls behind" if knee.limit == summary.SERVER
                             else "not the server's limit, which lies above")))
        shown = [steps[i] for i in sorted({0, len(steps) // 2, steps.index(at or steps[-1]), len(steps) - 1})]
        lines.append("  round trip p50/p99: " + ", ".join("%s/%s ms at %s msgs/s" % (
            _ms(step.rtt_ms["p50"]), _ms(step.rtt_ms["p99"]), _num(step.rate)) for step in shown))
        cost = at or steps[-1]
        if cost.server_cpu_us_per_msg is None:
            lines.append("  server CPU and RSS: %s" % SERVER_UNKNOWN)
        else:
            lines.append("  server at %s msgs/s: %.2f us of CPU per delivery, CPU %s, RSS %s MB" % (
                _num(cost.rate), cost.server_cpu_us_per_msg, _pct(cost.server_cpu), _mb(cost.server_rss_kb)))
        end = results.level_ends.get(key)
        lines.append("  stopped: %s" % (level_end_line(end) if end else "the run ended before the level did"))
    if not lines:
        lines.append("no step measured")
    lines.append("results: %s; figures and tables: %s" % (out_path, PLOT % out_path))
    return "\n".join(lines)


def cluster_rss(rss_kb):
    """The RSS of a cluster's processes by name: ``brokers 5 x 450 MB (2,250 MB), redis 4 MB``."""
    brokers = [kb for name, kb in rss_kb.items() if name.startswith("broker")]
    text = "brokers %d x %s MB (%s MB)" % (len(brokers), _num(sum(brokers) / len(brokers) / 1024),
                                           _num(sum(brokers) / 1024))
    if "redis" in rss_kb:
        text += ", redis %s MB" % _num(rss_kb["redis"] / 1024)
    return text


def feed_sample_line(sample):
    """One line per :class:`loadtest.records.FeedSample`."""
    delivery = sample.delivery_ms
    return "%s  %5.0f s  published %d  delivered %s  p50 %s  p99 %s  max %s ms  client cpu %s  RSS %s" % (
        sample.server, sample.elapsed_s, sample.published, _num(sample.received), _ms(delivery["p50"]),
        _ms(delivery["p99"]), _ms(delivery["max"]), _pct(sample.client_cpu), cluster_rss(sample.rss_kb))


def feed_verdict_line(record):
    """The line a person reads when a feed (a :class:`loadtest.records.Feed`) ends."""
    delivery, answered, cpu_s = record.delivery_ms, record.publish_ms, record.cpu_s
    brokers_s = sum(seconds for name, seconds in cpu_s.items() if name != "redis")
    return ("%s x%d %s: %s listeners, %d published (%.0f/s, answered p50 %s p99 %s ms), delivered p50 %s p99 %s "
            "max %s ms; CPU us per publish: brokers %s, redis %s, per delivery %s%s; %d missing, %d twice, "
            "%d dropped (%s)" % (
                record.server, record.brokers, record.publish, _num(record.connected), record.published,
                record.published / record.duration_s if record.duration_s else 0, _ms(answered["p50"]),
                _ms(answered["p99"]), _ms(delivery["p50"]), _ms(delivery["p99"]), _ms(delivery["max"]),
                _us_each(brokers_s, record.published), _us_each(cpu_s.get("redis"), record.published),
                _us_each(brokers_s, record.received),
                "; counter totals %s" % ",".join(map(str, record.counter_totals.values())) if record.counter_totals
                else "", record.short, record.extra, record.dropped, record.end))


def _us_each(seconds, count):
    return "-" if seconds is None or not count else "%.1f" % (seconds * 1e6 / count)


def burst_line(result):
    """The line a person reads when ``abuse``'s burst ends: its result (see :func:`loadtest.scenarios.abuse.run_burst`)."""
    head = "%s burst: %s attempts over %g s" % (result["server"], _num(result["attempts"]), result["burst_seconds"])
    if "totals" not in result:
        return "%s: the attacker failed (exit %s)" % (head, result["attacker"]["failed"])
    totals, verdict = result["totals"], result["verdict"]
    failed = [name for name, passed in verdict.items() if name != "passed" and not passed]
    return ("%s (sent in %.2f s, answered by %.2f s): %s sessions admitted (at most %s), %s /info passed; "
            "%s refused with Retry-After, %d without; %d other, %d errors; canaries p50/p99/max %s quiet, %s "
            "during: %s" % (
                head, result["sent_s"], result["window_s"], _num(result["sessions_admitted"]),
                _num(result["admitted_bound"]), _num(result["answers"]["info"]["admitted"]),
                _num(totals["retry_after"]), totals["bare_503"], totals["other"], totals["error"],
                _rtt_line(result["quiet"]), _rtt_line(result["during_burst"]),
                "passed" if verdict["passed"] else "FAILED (%s)" % ", ".join(failed)))


def _rtt_line(step):
    if step is None:
        return "-"
    return "%s/%s/%s ms" % (_ms(step["p50_ms"]), _ms(step["p99_ms"]), _ms(step["max_ms"]))


def listed(counts):
    """``{reason: count}`` as a person reads it: ``2 refused, 1 timeout``, by reason."""
    return ", ".join("%d %s" % (count, reason) for reason, count in sorted(counts.items()))


def _num(value):
    return "{:,.0f}".format(value)


def _ms(value):
    return "-" if value is None else "%.1f" % value if value < 100 else "%.0f" % value


def _mb(kb):
    return "-" if kb is None else "%.1f" % (kb / 1024)


def _clock(seconds):
    seconds = max(0, int(round(seconds)))
    return "%d:%02d" % (seconds // 60, seconds % 60)


def _pct(value):
    return "-" if value is None else "%.0f%%" % (value * 100)


class StatusLine:
    """One line on stderr: rewritten in place on a terminal, else printed once per step."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.interactive = stream.isatty()
        self.last = ""
        self.where = ""
        self._width = 0
        self._shown_at = 0.0
        self._phase = None

    def progress(self, state):
        phase = state["phase"]
        now = time.monotonic()
        if not self.interactive or (phase == self._phase and now - self._shown_at < REFRESH_S):
            return
        self._phase, self._shown_at = phase, now
        if phase == "connecting":
            text = "level %d: connecting %d/%d" % (state["level"], state["opened"], state["level"])
        elif phase == "pause":
            text = "level %d: next rate %g/s  %s" % (state["level"], state["rate"], self.last)
        else:
            text = "level %d  rate %g/s  %4.1f/%gs  %s%s" % (
                state["level"], state["rate"], state["elapsed"], state["duration"], self.last, self.where)
        self._show(text)

    def step(self, step, where=""):
        """A :class:`loadtest.records.Step` just measured; ``where``: how far the run is (:func:`sweep_progress`)."""
        rtt = step.rtt_ms
        self.last = "last: %s msg/s, rtt mean %s p99 %s ms, client cpu %s%s%s" % (
            _num(step.server_msgs_per_s), _ms(rtt["mean"]), _ms(rtt["p99"]), _pct(step.client_cpu),
            "" if step.server_cpu is None else ", server cpu %s" % _pct(step.server_cpu),
            " CLIENT-BOUND" if step.client_bound else "")
        self.where = where and "  (%s)" % where
        if not self.interactive:
            self.stream.write("level %d rate %g/s: %s%s\n" % (step.level, step.rate, self.last[6:], self.where))
            self.stream.flush()

    def soak(self, server, left_s, sample, fresh=False):
        """A soak's state: time left, the last ``sample``; ``fresh``: it just arrived (a line off a terminal)."""
        text = "%s  soak  %s left" % (server, _clock(left_s))
        if sample is not None:
            text += "  RSS %s MB  %s msg/s  p99 %s ms" % (
                _mb(sample.server_rss_kb), _num(sample.server_msgs_per_s), _ms(sample.rtt_ms["p99"]))
            if sample.lost or sample.dropped:
                text += "  lost %d  dropped %d" % (sample.lost, sample.dropped)
        if not self.interactive:
            if fresh:
                self.stream.write(text + "\n")
                self.stream.flush()
            return
        now = time.monotonic()
        if not fresh and self._phase == "soak" and now - self._shown_at < REFRESH_S:
            return
        self._phase, self._shown_at = "soak", now
        self._show(text)

    def message(self, text):
        """A line that stays (level ends, errors)."""
        if self.interactive:
            self._show("")
            self.stream.write("\r")
        self.stream.write(text + "\n")
        self.stream.flush()

    def _show(self, text):
        pad = max(0, self._width - len(text))
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()
        self._width = len(text)
