"""The benchmark method: concurrency levels, rate steps, overload rules, step records.

:func:`sweep` runs on the caller's event loop (``python -m loadtest`` and
``compare`` drive it through ``cli.run_interruptible``, so Ctrl-C stops it
cleanly); :func:`run_sweep` is the same as one synchronous call.
"""

import asyncio
import math

from loadtest import client, procstat, workers

DEFAULT_LEVELS = (25, 50, 100, 200, 500, 1000, 2000)
FIRST_RATE = 1
LAST_RATE = 800
RATE_RATIO = math.sqrt(2)
MAX_MEAN_RTT_MS = 1500.0
CLIENT_BOUND_CPU = 0.9
CLIENT_BOUND_LAG_MS = 10.0


class ServerGone(Exception):
    """The server under test died or stopped accepting connections: the run cannot go on."""


def rate_schedule(first=FIRST_RATE, last=LAST_RATE, ratio=RATE_RATIO):
    """Total rates (msgs/s) for one level: geometric from ``first`` to ``last``, whole numbers."""
    rates = []
    rate = float(first)
    while rate < last:
        if not rates or int(round(rate)) > rates[-1]:
            rates.append(int(round(rate)))
        rate *= ratio
    rates.append(last)
    return rates


def rtt_summary(histogram):
    """Round-trip statistics in milliseconds from an HDR histogram in microseconds."""
    if not histogram.get_total_count():
        return {"mean": None, "p50": None, "p95": None, "p99": None, "max": None}
    return {
        "mean": round(histogram.get_mean_value() / 1000, 3),
        "p50": histogram.get_value_at_percentile(50) / 1000,
        "p95": histogram.get_value_at_percentile(95) / 1000,
        "p99": histogram.get_value_at_percentile(99) / 1000,
        "max": histogram.get_max_value() / 1000,
    }


def overload_reason(step):
    """Why a step shows the server overloaded (DESIGN.md section 5), or None."""
    if step["dropped"]:
        return "connection lost (%s)" % ", ".join(sorted(step.get("drop_reasons", {})) or ["?"])
    if step["lost"]:
        return "%d messages not back within %g s" % (step["lost"], client.LOSS_AFTER_S)
    mean = step["rtt_ms"]["mean"]
    if mean is not None and mean > MAX_MEAN_RTT_MS:
        return "mean round trip %.0f ms > %.0f ms" % (mean, MAX_MEAN_RTT_MS)
    if step.get("end_reason"):
        return step["end_reason"]
    return None


def merge_partials(partials):
    """One step's figures from the partial steps of every client group."""
    histogram = client.new_histogram()
    for part in partials:
        histogram.add(part["histogram"])
    drop_reasons = {}
    for part in partials:
        for reason, count in part["drop_reasons"].items():
            drop_reasons[reason] = drop_reasons.get(reason, 0) + count
    ends = [part["end_reason"] for part in partials if part["end_reason"]]
    return {
        "duration_s": max(part["duration_s"] for part in partials),
        "sent": sum(part["sent"] for part in partials),
        "received": sum(part["received"] for part in partials),
        "lost": sum(part["lost"] for part in partials),
        "dropped": sum(part["dropped"] for part in partials),
        "drop_reasons": drop_reasons,
        "histogram": histogram,
        "client_cpu": max(part["cpu_s"] / part["duration_s"] for part in partials),
        "loop_lag_ms": {
            "mean": max(part["loop_lag_ms"]["mean"] for part in partials),
            "max": max(part["loop_lag_ms"]["max"] for part in partials),
        },
        "end_reason": ends[0] if ends else None,
    }


class ServerProbe:
    """CPU and RSS of the server process between two moments (all None without a pid).

    Raises :class:`ServerGone` as soon as the process has exited.
    """

    def __init__(self, pid):
        self.pid = pid
        self._cpu = None

    def _read(self, what):
        try:
            return what(self.pid)
        except procstat.ProcessGone as exc:
            raise ServerGone("the server died: %s" % exc) from None

    def check(self):
        if self.pid is not None:
            self._read(procstat.cpu_seconds)

    def start(self):
        self._cpu = self._read(procstat.cpu_seconds) if self.pid is not None else None

    def stop(self, duration, received):
        if self.pid is None:
            return {"server_cpu": None, "server_rss_kb": None, "server_cpu_us_per_msg": None}
        used = self._read(procstat.cpu_seconds) - self._cpu
        return {
            "server_cpu": round(used / duration, 4),
            "server_rss_kb": self._read(procstat.rss_kb),
            "server_cpu_us_per_msg": round(used * 1e6 / received, 3) if received else None,
        }


def step_record(server, level, rate, merged, server_figures):
    rtt = rtt_summary(merged["histogram"])
    duration = merged["duration_s"]
    record = {
        "type": "step",
        "server": server,
        "level": level,
        "rate": rate,
        "duration_s": round(duration, 3),
        "sent": merged["sent"],
        "received": merged["received"],
        "server_msgs_per_s": round(merged["received"] / duration, 1),
        "rtt_ms": rtt,
        "lost": merged["lost"],
        "dropped": merged["dropped"],
        "client_cpu": round(merged["client_cpu"], 4),
        "loop_lag_ms": merged["loop_lag_ms"],
    }
    record.update(server_figures)
    record["client_bound"] = (
        merged["client_cpu"] >= CLIENT_BOUND_CPU
        or merged["loop_lag_ms"]["mean"] >= CLIENT_BOUND_LAG_MS
    )
    reason = overload_reason(dict(merged, rtt_ms=rtt))
    record["overloaded"] = reason is not None
    record["overload_reason"] = reason
    return record


async def sweep(
    url,
    levels=DEFAULT_LEVELS,
    rates=None,
    duration=10.0,
    pause=2.0,
    transport="sockjs",
    server="server",
    server_pid=None,
    source_addresses=None,
    on_step=None,
    on_level=None,
    on_progress=None,
    procs=1,
    client_cpus=None,
    stop_at_overload=True,
):
    """Run the sweep on the current loop; returns the step records (see :func:`run_sweep`)."""
    probe = ServerProbe(server_pid)
    steps = []
    schedule = list(rates) if rates else rate_schedule()

    async def run_level(groups, shares, level):
        """Connect, then step through the schedule; returns why the level ended."""
        _progress(on_progress, level=level, phase="connecting", opened=0)
        failures = await _connect(groups, shares, level, on_progress)
        if failures:
            summary = ", ".join("%d %s" % (n, r) for r, n in sorted(failures.items()))
            if sum(failures.values()) >= level:
                raise ServerGone("no connection to %s opened: %s%s" % (url, summary, _probe_state(probe)))
            return "connections failed: %s" % summary
        for rate in schedule:
            _progress(on_progress, level=level, phase="pause", rate=rate)
            await asyncio.sleep(pause)
            probe.check()
            total = max(1, int(round(rate * duration)))
            probe.start()
            merged = merge_partials(await _run_step(groups, rate, duration, total, on_progress, level))
            figures = probe.stop(merged["duration_s"], merged["received"])
            record = step_record(server, level, rate, merged, figures)
            steps.append(record)
            if on_step is not None:
                on_step(record)
            if merged["end_reason"] == "every connection lost":
                await _check_still_accepting(url, transport, probe)
            if record["overloaded"] and (stop_at_overload or not any(g.alive_count() for g in groups)):
                return "overloaded: %s" % record["overload_reason"]
        return "sweep done"

    for level in levels:
        groups, shares = workers.make_groups(url, transport, source_addresses, level, procs, client_cpus)
        try:
            end = await run_level(groups, shares, level)
        finally:
            for group in groups:
                group.close()
        if on_level is not None:
            on_level({"type": "level", "server": server, "level": level, "end": end})
    return steps


async def _check_still_accepting(url, transport, probe):
    """After every connection dropped: raise :class:`ServerGone` unless a new one opens."""
    probe.check()
    group = client.ClientGroup(url, transport)
    try:
        failures = await group.connect(1)
    finally:
        group.close()
    if failures:
        raise ServerGone("every connection was lost and a new one fails: %s" % ", ".join(failures))


def _probe_state(probe):
    try:
        probe.check()
    except ServerGone as exc:
        return " (%s)" % exc
    return ""


def _progress(on_progress, **state):
    if on_progress is not None:
        on_progress(state)


async def _connect(groups, shares, level, on_progress):
    opened = [0] * len(groups)

    def track(index):
        def seen(count):
            opened[index] = count
            _progress(on_progress, level=level, phase="connecting", opened=sum(opened))
        return seen

    results = await asyncio.gather(
        *(group.connect(share, track(i)) for i, (group, share) in enumerate(zip(groups, shares)))
    )
    failures = {}
    for result in results:
        for reason, count in result.items():
            failures[reason] = failures.get(reason, 0) + count
    return failures


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


async def _run_step(groups, rate, duration, total, on_progress, level):
    counts = split(total, [group.alive_count() for group in groups])
    loop = asyncio.get_event_loop()
    started = loop.time()

    async def tick():
        while True:
            _progress(on_progress, level=level, phase="step", rate=rate,
                      elapsed=loop.time() - started, duration=duration)
            await asyncio.sleep(0.5)

    ticker = asyncio.ensure_future(tick())
    try:
        return await asyncio.gather(
            *(group.run_step(count, duration, total) for group, count in zip(groups, counts))
        )
    finally:
        ticker.cancel()


def run_sweep(url, levels=DEFAULT_LEVELS, **options):
    """Sweep ``url`` level by level until overload; returns the list of step records.

    ``options``: ``rates`` (default: :func:`rate_schedule`), ``duration`` and ``pause``
    (seconds per step), ``transport`` (``sockjs`` or ``raw``), ``server`` (label in the
    records), ``server_pid`` (to measure its CPU and RSS), ``source_addresses``,
    ``procs`` (client processes) and ``client_cpus`` (CPUs to pin worker processes to),
    ``on_step(record)``, ``on_level(record)``, ``on_progress(state)``, and
    ``stop_at_overload`` (default True; False goes on through the schedule with
    the connections left, until none is).
    Raises :class:`ServerGone` when the server dies; the steps measured until then
    have already been passed to ``on_step``.
    """
    return asyncio.run(sweep(url, levels, **options))
