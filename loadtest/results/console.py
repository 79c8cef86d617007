"""What a person sees: the status line while a sweep or a soak runs, the table at the end, a feed's lines."""

import sys
import time

REFRESH_S = 0.1


def format_table(steps):
    """A plain-text table of :class:`loadtest.records.Step` records, one row per step."""
    header = (
        "server", "clients", "rate/s", "server msg/s", "mean ms", "p50", "p95", "p99", "max",
        "lost", "drop", "client cpu", "srv cpu", "us/msg", "note",
    )
    rows = [header]
    for step in steps:
        rtt = step.rtt_ms
        note = []
        if step.client_bound:
            note.append("CLIENT-BOUND")
        if step.overloaded:
            note.append("overloaded: " + step.overload_reason)
        rows.append((
            step.server, str(step.level), _num(step.rate), _num(step.server_msgs_per_s),
            _ms(rtt["mean"]), _ms(rtt["p50"]), _ms(rtt["p95"]), _ms(rtt["p99"]), _ms(rtt["max"]),
            str(step.lost), str(step.dropped), _pct(step.client_cpu),
            _pct(step.server_cpu), _ms(step.server_cpu_us_per_msg), "; ".join(note),
        ))
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = []
    for n, row in enumerate(rows):
        cells = [cell.ljust(w) if i in (0, len(row) - 1) else cell.rjust(w)
                 for i, (cell, w) in enumerate(zip(row, widths))]
        lines.append("  ".join(cells).rstrip())
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
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
    delivery = record.delivery_ms
    return ("%s x%d: %s listeners, %d published, delivered p50 %s p99 %s max %s ms; %d missing, %d twice, "
            "%d dropped (%s)" % (record.server, record.brokers, _num(record.connected), record.published,
                                 _ms(delivery["p50"]), _ms(delivery["p99"]), _ms(delivery["max"]), record.short,
                                 record.extra, record.dropped, record.end))


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
    """One line on stderr, rewritten in place on a terminal, otherwise printed once per step.

    A progress bar library needs a known total; a sweep ends at overload, so the
    honest display is the current state: level, rate, time into the step, last figures.
    """

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.interactive = stream.isatty()
        self.last = ""
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
            text = "level %d  rate %g/s  %4.1f/%gs  %s" % (
                state["level"], state["rate"], state["elapsed"], state["duration"], self.last)
        self._show(text)

    def step(self, step):
        """A :class:`loadtest.records.Step` just measured."""
        rtt = step.rtt_ms
        self.last = "last: %s msg/s, rtt mean %s p99 %s ms, client cpu %s%s" % (
            _num(step.server_msgs_per_s), _ms(rtt["mean"]), _ms(rtt["p99"]),
            _pct(step.client_cpu), " CLIENT-BOUND" if step.client_bound else "")
        if not self.interactive:
            self.stream.write("level %d rate %g/s: %s\n" % (step.level, step.rate, self.last[6:]))
            self.stream.flush()

    def soak(self, server, left_s, sample, fresh=False):
        """A soak's state: server, time left and the last ``sample``'s RSS, deliveries/s and p99
        (a :class:`loadtest.records.SoakSample`, or None before the first).

        ``fresh``: the sample just arrived (a line of its own when not on a
        terminal); otherwise time passed and the line refreshes on a terminal.
        """
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
