"""When PyPy's garbage collector starts a major collection: a ceiling that does
not depend on the machine's CPU cache.

Why: a broker under steady traffic promotes a little garbage at every minor
collection (whatever is in flight at that instant: read buffers, frames,
requests), and that garbage is freed only by a major collection. PyPy starts
one when the heap reaches the larger of two thresholds: 1.82 times what was
live after the last one (``PYPY_GC_MAJOR_COLLECT``), and ``PYPY_GC_MIN``,
which defaults to eight nurseries. The nursery defaults to half the "cache
size" in ``/proc/cpuinfo``, which many x86 servers report as their L3 cache:
with a 64 MiB nursery nothing is collected before the heap holds 512 MiB of
garbage, and the broker looks as if it leaked. (This machine reports 1 MiB and
never shows it; ``PYPY_GC_NURSERY=64MB`` reproduces it anywhere.)

Rules this module keeps:

* A major collection starts once the memory the GC holds after a minor
  collection exceeds ``growth`` times what it held after the last major
  collection, and by at least ``floor`` bytes: PyPy's own rule, without the
  floor that scales with the nursery.
* It is started, not run: ``gc.collect_step()`` begins an incremental major
  collection, which PyPy carries on in small steps at the following minor
  collections, so no pause is longer than one step.
* Nothing runs on a timer, and nothing at all on CPython, whose reference
  counting frees this garbage at once.

:class:`MajorCollectionTrigger` is the rule alone, with no GC, tested as such;
:func:`install` wires it to PyPy's GC hooks.
"""

import gc
import platform

DEFAULT_GROWTH = 1.82
DEFAULT_FLOOR = 32 << 20


class MajorCollectionTrigger:
    """Decides, after each minor collection, whether to start a major one.

    ``after_minor(used)`` takes the bytes the GC holds after a minor
    collection and answers True when a major collection should start now;
    ``after_major(live)`` says one has finished, leaving ``live`` bytes. Until
    the first major collection, the first minor collection sets the baseline.
    """

    def __init__(self, growth=DEFAULT_GROWTH, floor=DEFAULT_FLOOR):
        self.growth = growth
        self.floor = floor
        self.baseline = None
        self.collecting = False
        self.started = 0
        self.finished = 0

    def after_minor(self, used):
        if self.baseline is None:
            self.baseline = used
            return False
        if self.collecting or used <= max(self.baseline * self.growth, self.baseline + self.floor):
            return False
        self.collecting = True
        self.started += 1
        return True

    def after_major(self, live):
        self.collecting = False
        self.baseline = live
        self.finished += 1

    def stats(self):
        """Major collections started by this rule, and finished by whoever started them."""
        return {"major_started": self.started, "major_finished": self.finished}


def install(trigger=None):
    """On PyPy, start major collections by ``trigger`` (a new
    :class:`MajorCollectionTrigger` by default) and return it; on CPython,
    return None and change nothing."""
    if platform.python_implementation() != "PyPy":
        return None
    trigger = trigger or MajorCollectionTrigger()

    def on_minor(stats):
        if trigger.after_minor(stats.total_memory_used):
            gc.collect_step()

    def on_major(stats):
        trigger.after_major(stats.arenas_bytes + stats.rawmalloc_bytes_after)

    gc.hooks.on_gc_minor = on_minor
    gc.hooks.on_gc_collect = on_major
    return trigger
