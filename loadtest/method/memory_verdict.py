"""What a series of RSS readings says: growth after the warm-up, per hour and in %, and a verdict.

Rules (BENCHMARKS.rst, "Soak"):

- The reference is the first reading at or after the warm-up (the server's steady size);
  the final reading is the last one. MB are MiB (``/proc`` counts KiB).
- "flat": the final RSS exceeds the reference by at most 10 % of it or 20 MB, whichever is
  larger; a shrinking RSS is flat. Otherwise "growing". No verdict (None) without a reading
  after the reference. Pure functions on ``(elapsed_s, rss_kb)`` pairs; no I/O.
"""

FLAT_SHARE = 0.10
FLAT_MIN_MB = 20.0
KB_PER_MB = 1024.0


def tolerance_kb(reference_kb):
    """How much RSS may grow above ``reference_kb`` and still count as flat."""
    return max(reference_kb * FLAT_SHARE, FLAT_MIN_MB * KB_PER_MB)


def verdict(reference_kb, final_kb):
    """``"flat"`` or ``"growing"``: the final RSS against the reference."""
    return "flat" if final_kb - reference_kb <= tolerance_kb(reference_kb) else "growing"


def growth(readings, warmup_s):
    """Growth after the warm-up of ``readings`` (``(elapsed_s, rss_kb)``, in time order): the Soak's figures."""
    readings = [reading for reading in readings if reading[1] is not None]
    after = [reading for reading in readings if reading[0] >= warmup_s]
    figures = dict.fromkeys(("rss_after_warmup_kb", "warmup_at_s", "final_rss_kb", "final_at_s", "growth_mb",
                             "growth_mb_per_h", "growth_pct", "verdict"))
    if readings:
        figures["final_at_s"], figures["final_rss_kb"] = readings[-1]
    if len(after) < 2:
        if after:
            figures["warmup_at_s"], figures["rss_after_warmup_kb"] = after[0]
        return figures
    (start_s, start_kb), (end_s, end_kb) = after[0], after[-1]
    grown_mb = (end_kb - start_kb) / KB_PER_MB
    figures.update(
        rss_after_warmup_kb=start_kb, warmup_at_s=start_s, growth_mb=round(grown_mb, 2),
        growth_mb_per_h=round(grown_mb * 3600.0 / (end_s - start_s), 2) if end_s > start_s else None,
        growth_pct=round(100.0 * (end_kb - start_kb) / start_kb, 2) if start_kb else None,
        verdict=verdict(start_kb, end_kb))
    return figures
