"""The benchmark method's rules, as pure functions: rates, loss and overload, merging, step records.

Rules (docs/load-testing.rst, "The latency sweep"; BENCHMARKS.rst):

- A level holds N connections; its rates (msgs/s in total) rise by ``RATE_RATIO`` a step,
  from where N x rate is about ``FIRST_DELIVERIES_PER_S`` (1 msg/s at least) until a step
  breaks, or at most to the cap: ``MAX_RATE`` msgs/s and ``MAX_DELIVERIES_PER_S``. The
  level's end says which (:func:`level_end`, :func:`cap_end`).
- A step ends early when every connection is lost or a message is not back within
  ``LOSS_AFTER_S``; a message sent more than that before the step's end and still
  unanswered is lost.
- A step shows the server overloaded when a connection dropped, a message was lost, or the
  mean round trip exceeds ``MAX_MEAN_RTT_MS``.
- A step is client-bound when the client was saturated: its CPU at ``CLIENT_BOUND_CPU`` of a
  core or its loop ``CLIENT_BOUND_LAG_MS`` late.
- A step that broke (overloaded, or past realtime: mean round trip above
  ``REALTIME_MS``) is the client's limit, not the server's, when it was
  client-bound and the server was not saturated, its CPU below
  ``SERVER_SATURATED_CPU`` of its core or unknown (:func:`client_limited`).
  A sweep's level ends at such a step (client-bound), at an overloaded one, or
  once ``CLIENT_BOUND_STEPS`` steps in a row were client-bound with the server
  not saturated, within realtime or not: the steps after them would measure
  the client (:func:`ends_sweep`). Past the server's realtime it goes on to overload.
- Round trips go into an HDR histogram, 1 us to 60 s, 3 significant digits.
- No I/O and no clock here: times are passed in.
"""

import dataclasses
import enum
import math
from typing import Dict, Optional

from hdrh.histogram import HdrHistogram

from loadtest import records

DEFAULT_LEVELS = (25, 50, 100, 200, 500, 1000, 2000)
FIRST_DELIVERIES_PER_S = 1000
RATE_RATIO = math.sqrt(2)
MAX_RATE = 100000
MAX_DELIVERIES_PER_S = 10000000
LOSS_AFTER_S = 5.0
MAX_MEAN_RTT_MS = 1500.0
CLIENT_BOUND_CPU = 0.9
CLIENT_BOUND_LAG_MS = 10.0
SERVER_SATURATED_CPU = 0.9
CLIENT_BOUND_STEPS = 2
REALTIME_MS = 200.0
RTT_HIGHEST_US = 60 * 1000 * 1000


class End(enum.Enum):
    """Why a step, a level or a soak ended: an ``end`` field is :meth:`text`, the ``value`` then
    ``": "`` and any detail (``overloaded: mean round trip 1600 ms > 1500 ms``)."""

    ALL_LOST = "every connection lost"
    LATE = "a message not back within %g s" % LOSS_AFTER_S
    SWEEP_DONE = "sweep done"
    CAP_REACHED = "the sweep's cap reached"
    OVERLOADED = "overloaded"
    CLIENT_BOUND = "client-bound"
    CONNECTIONS_FAILED = "connections failed"
    COMPLETED = "completed"
    INTERRUPTED = "interrupted"
    SERVER_GONE = "server gone"

    def text(self, detail=None):
        return self.value if detail is None else "%s: %s" % (self.value, detail)

    @classmethod
    def of(cls, text):
        """The End a results file's ``end`` text names (older files too), or None for any other text."""
        try:
            return cls(text.partition(": ")[0])
        except ValueError:
            return None


def new_histogram():
    return HdrHistogram(1, RTT_HIGHEST_US, 3)


def rate_cap(level):
    """The highest total rate (msgs/s) a sweep offers ``level`` connections."""
    return max(1, min(MAX_RATE, MAX_DELIVERIES_PER_S // level))


def rate_schedule(level):
    """Total rates (msgs/s) for one level, whole numbers: geometric from about
    ``FIRST_DELIVERIES_PER_S`` / ``level`` (at least 1) to :func:`rate_cap`."""
    last = rate_cap(level)
    first = min(last, max(1, int(round(FIRST_DELIVERIES_PER_S / level))))
    rates = []
    rate = float(first)
    while rate < last:
        if not rates or int(round(rate)) > rates[-1]:
            rates.append(int(round(rate)))
        rate *= RATE_RATIO
    rates.append(last)
    return rates


def messages_due(elapsed_s, rate, to_send):
    """How many of ``to_send`` messages, paced at ``rate`` per second from 0, are due ``elapsed_s`` in."""
    return min(to_send, int(elapsed_s * rate) + 1)


def split(total, weights):
    """``total`` as whole numbers proportional to ``weights`` (largest remainders get the rest)."""
    weight_sum = sum(weights)
    if not weight_sum:
        return [0] * len(weights)
    exact = [total * w / weight_sum for w in weights]
    counts = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: exact[i] - counts[i], reverse=True)
    for i in by_remainder[: total - sum(counts)]:
        counts[i] += 1
    return counts


def step_end(clients, sent_log, now_us):
    """Why a step must stop at ``now_us``, or None; ``sent_log`` (``(sent_us, client, seq)`` in
    send order, clients with ``alive`` and ``pending``) loses its answered head here."""
    if not any(client.alive for client in clients):
        return End.ALL_LOST
    while sent_log and sent_log[0][2] not in sent_log[0][1].pending:
        sent_log.popleft()
    if sent_log and sent_log[0][0] < now_us - int(LOSS_AFTER_S * 1e6):
        return End.LATE
    return None


def lost_messages(sent_log, cutoff_us):
    """Messages sent before ``cutoff_us`` and still unanswered."""
    return sum(1 for sent_us, client, seq in sent_log if sent_us < cutoff_us and seq in client.pending)


def rtt_summary(histogram):
    """Round-trip statistics in milliseconds from an HDR histogram in microseconds."""
    if not histogram.get_total_count():
        return {"mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    return dict({"mean": round(histogram.get_mean_value() / 1000, 3)},
                **{"p%d" % p: histogram.get_value_at_percentile(p) / 1000 for p in (50, 95, 99)},
                max=histogram.get_max_value() / 1000)


class Piped:
    """A measurement that crosses from a worker process with its ``histogram`` HDR-encoded."""

    def __reduce__(self):
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        return _unpiped, (type(self), dict(fields, histogram=self.histogram.encode()))


def _unpiped(kind, fields):
    return kind(**dict(fields, histogram=HdrHistogram.decode(fields["histogram"])))


@dataclasses.dataclass(frozen=True)
class Partial(Piped):
    """What one client group measured of a step (:meth:`loadtest.client.connections.ClientGroup.run_step`)."""

    duration_s: float
    sent: int
    received: int
    lost: int
    dropped: int
    reopened: int
    drop_reasons: Dict[str, int]
    histogram: HdrHistogram
    cpu_s: float
    loop_lag_ms: Dict[str, float]
    end: Optional[End]


@dataclasses.dataclass(frozen=True)
class FeedPartial(Piped):
    """What one group of listeners had of the feed since its last sample (:meth:`ClientGroup.take_sample`)."""

    received: int
    histogram: HdrHistogram
    alive: int
    drop_reasons: Dict[str, int]
    short: int
    extra: int
    cpu_s: float


def merge_feed(partials):
    """One :class:`FeedPartial` of every group's: counts and CPU added, histograms merged."""
    histogram, drop_reasons = _merge_histograms_and_drops(partials)
    return FeedPartial(histogram=histogram, drop_reasons=drop_reasons, **_added(partials, "received", "alive", "short",
                                                                                "extra", "cpu_s"))


@dataclasses.dataclass(frozen=True)
class Merged:
    """One step's figures, every client group's partial added up (:func:`merge_partials`)."""

    duration_s: float
    sent: int
    received: int
    lost: int
    dropped: int
    reopened: int
    drop_reasons: Dict[str, int]
    histogram: HdrHistogram
    client_cpu: float
    loop_lag_ms: Dict[str, float]
    end: Optional[End]


def merge_partials(partials):
    """One step's figures from the :class:`Partial` of every client group."""
    histogram, drop_reasons = _merge_histograms_and_drops(partials)
    ends = [part.end for part in partials if part.end is not None]
    return Merged(duration_s=max(part.duration_s for part in partials), drop_reasons=drop_reasons, histogram=histogram,
                  client_cpu=max(part.cpu_s / part.duration_s for part in partials),
                  loop_lag_ms={key: max(part.loop_lag_ms[key] for part in partials) for key in ("mean", "max")},
                  end=ends[0] if ends else None, **_added(partials, "sent", "received", "lost", "dropped", "reopened"))


def _added(partials, *names):
    """``{name: the sum of every partial's}`` of ``names``."""
    return {name: sum(getattr(part, name) for part in partials) for name in names}


def _merge_histograms_and_drops(partials):
    """The histogram of every partial's, and their dropped connections' reasons added up."""
    histogram = new_histogram()
    drop_reasons = {}
    for part in partials:
        histogram.add(part.histogram)
        for reason, count in part.drop_reasons.items():
            drop_reasons[reason] = drop_reasons.get(reason, 0) + count
    return histogram, drop_reasons


def overload_reason(merged, mean_rtt_ms):
    """Why a step shows the server overloaded, or None."""
    if merged.dropped:
        return "connection lost (%s)" % ", ".join(sorted(merged.drop_reasons) or ["?"])
    if merged.lost:
        return "%d messages not back within %g s" % (merged.lost, LOSS_AFTER_S)
    if mean_rtt_ms is not None and mean_rtt_ms > MAX_MEAN_RTT_MS:
        return "mean round trip %.0f ms > %.0f ms" % (mean_rtt_ms, MAX_MEAN_RTT_MS)
    if merged.end is not None:
        return merged.end.value
    return None


def past_realtime(overloaded, mean_rtt_ms):
    """Whether a step broke: overloaded, or its mean round trip above ``REALTIME_MS`` (or unknown)."""
    return overloaded or mean_rtt_ms is None or mean_rtt_ms > REALTIME_MS


def client_limited(client_bound, server_cpu):
    """Whether a step that broke shows the client's limit: the client saturated, the server (None: unknown) not."""
    return client_bound and (server_cpu is None or server_cpu < SERVER_SATURATED_CPU)


def ends_sweep(steps):
    """Whether a sweep's level ends at the last of ``steps``, the level's records so far (the module's rules)."""
    step, recent = steps[-1], steps[-CLIENT_BOUND_STEPS:]
    return step.overloaded or (past_realtime(False, step.rtt_ms["mean"]) and client_limited(
        step.client_bound, step.server_cpu)) or (len(recent) == CLIENT_BOUND_STEPS and all(
            client_limited(s.client_bound, s.server_cpu) for s in recent))


def level_end(step):
    """The ``end`` text of a level whose sweep stops at ``step``: client-bound or overloaded."""
    if not client_limited(step.client_bound, step.server_cpu):
        return End.OVERLOADED.text(step.overload_reason)
    mean = step.rtt_ms["mean"]
    reason = step.overload_reason or (
        "mean round trip %s ms > %.0f ms" % ("?" if mean is None else "%.0f" % mean, REALTIME_MS)
        if past_realtime(False, mean) else "%d steps in a row client-bound" % CLIENT_BOUND_STEPS)
    return End.CLIENT_BOUND.text("at %s msgs/s (client CPU %.0f %%, loop lag %.1f ms; server CPU %s): %s" % (
        "{:,.0f}".format(step.rate), step.client_cpu * 100, step.loop_lag_ms["mean"],
        "unknown" if step.server_cpu is None else "%.0f %%" % (step.server_cpu * 100), reason))


def cap_end(level, rate):
    """The ``end`` text of a level whose sweep reached the cap at ``rate`` msgs/s without overload."""
    return End.CAP_REACHED.text("%s msgs/s x %d clients = %s deliveries/s" % (
        "{:,.0f}".format(rate), level, "{:,.0f}".format(rate * level)))


@dataclasses.dataclass(frozen=True)
class ServerFigures:
    """The server process over one step: CPU (a share of one core), RSS, CPU per delivered message; None unknown."""

    cpu: Optional[float] = None
    rss_kb: Optional[int] = None
    cpu_us_per_msg: Optional[float] = None

    @classmethod
    def of(cls, cpu_s, duration_s, received, rss_kb):
        """From the CPU seconds the server used in a step of ``duration_s`` that delivered ``received``."""
        return cls(cpu=round(cpu_s / duration_s, 4), rss_kb=rss_kb,
                   cpu_us_per_msg=round(cpu_s * 1e6 / received, 3) if received else None)


def step_record(server, transport, level, rate, merged, server_figures):
    """The :class:`loadtest.records.Step` of one step from its :class:`Merged` and :class:`ServerFigures`."""
    rtt = rtt_summary(merged.histogram)
    reason = overload_reason(merged, rtt["mean"])
    return records.Step(
        server=server, transport=transport, level=level, rate=rate, duration_s=round(merged.duration_s, 3),
        sent=merged.sent, received=merged.received, server_msgs_per_s=round(merged.received / merged.duration_s, 1),
        rtt_ms=rtt, lost=merged.lost, dropped=merged.dropped, reopened=merged.reopened,
        client_cpu=round(merged.client_cpu, 4), loop_lag_ms=merged.loop_lag_ms, server_cpu=server_figures.cpu,
        server_rss_kb=server_figures.rss_kb, server_cpu_us_per_msg=server_figures.cpu_us_per_msg,
        client_bound=merged.client_cpu >= CLIENT_BOUND_CPU or merged.loop_lag_ms["mean"] >= CLIENT_BOUND_LAG_MS,
        overloaded=reason is not None, overload_reason=reason)
