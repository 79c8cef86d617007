"""When the garbage collectors run: on PyPy, a major-collection ceiling that
does not depend on the CPU cache; on CPython, connections kept out of the full
collections.

PyPy. A broker under steady traffic promotes a little garbage at every minor
collection (whatever is in flight at that instant: read buffers, frames,
requests), and that garbage is freed only by a major collection. PyPy starts
one when the heap reaches the larger of two thresholds: 1.82 times what was
live after the last one (``PYPY_GC_MAJOR_COLLECT``), and ``PYPY_GC_MIN``,
which defaults to eight nurseries. The nursery defaults to half the "cache
size" in ``/proc/cpuinfo``, which many x86 servers report as their L3 cache:
with a 64 MiB nursery nothing is collected before the heap holds 512 MiB of
garbage, and the broker looks as if it leaked. The broker sets its own small
nursery (:mod:`broker.ops.pypy_environment`), but an operator's ``PYPY_GC_NURSERY`` may be
large, and this rule does not depend on it. Rules:

* A major collection starts once the memory the GC holds after a minor
  collection exceeds ``growth`` times what it held after the last major
  collection, and by at least ``floor`` bytes: PyPy's own rule, without the
  floor that scales with the nursery.
* ``growth`` is 1.5, not PyPy's 1.82: the heap's peak is what a broker's RSS
  rises to between two major collections, and with 19,000 streams the lower
  peak is about 25 MB less RSS for no CPU that a benchmark can see
  (BENCHMARKS.rst, "Transports"). The marking it adds is paid once per
  collection, and a broker's garbage comes slowly: under 1 MB a second there.
* It is started, not run: ``gc.collect_step()`` begins an incremental major
  collection, which PyPy carries on in small steps at the following minor
  collections, so no pause is longer than one step.
* Nothing runs on a timer.

CPython. Reference counting frees what the broker drops, but the cyclic
collector's full (generation 2) collection walks every tracked object it
holds, and every open connection holds many of its own: with tens of
thousands of connections one full collection holds the loop for seconds
(figures in BENCHMARKS.rst, "Collector pauses").
``gc.freeze()`` moves every tracked object to a permanent generation that no
collection walks; frozen objects are still freed by their reference counts,
only a reference cycle among them is never collected. Rules:

* Everything is frozen right after each full collection: what survived it was
  all reachable, none of it garbage. A full collection then walks only what
  the young generations promoted since the last one (timers and futures that
  live a few seconds, the connections of the moment).
* Generation 2's threshold is ``FULL_THRESHOLD`` (1) instead of CPython's
  10: a full collection may follow every second collection of generation 1
  instead of every eleventh. Each walks only what was promoted since the
  last one, once, so more of them cost the same in all and pause less each
  (BENCHMARKS.rst, "Collector pauses", has the objects walked either way).
* Connections arriving in a burst are frozen sooner: after a collection of
  generation 1 (its survivors have just moved to generation 2), if at least
  ``burst`` connections were admitted since the last freeze, so a full
  collection never meets more than ``burst`` unfrozen connections.
* A closed connection is freed by reference counting, frozen or not: a
  websocket or a session of requests that closes leaves no reference cycle
  (``tests/unit/broker/transports/test_router.py`` closes connections with the
  collector off and finds them freed), and the churn test checks that
  churned connections leave nothing behind with freezing on. Cycles that do
  form among frozen objects (an exception's traceback holds its frame) are
  found by an audit: when the interpreter's allocated memory blocks
  (``sys.getallocatedblocks()``, free to read) have grown ``growth`` times
  since the last audit (or since their lowest after it), the frozen objects
  are counted (a walk of the heap, far cheaper than a collection). More than ``slack`` times what the
  start-up base and the open connections account for (objects per connection
  as measured at the first audit, then on each freshly collected heap) means
  frozen garbage: everything is thawed, collected once and frozen again, and
  the objects per connection measured anew. The first audit only measures: it
  comes during the first burst of connections, when a full collection would
  stall them all. A broker that neither leaks
  nor grows is never audited.
* Nothing is frozen before the broker has started: ``install`` collects and
  freezes what the start-up left (modules, classes) and calls that the base.

:class:`MajorCollectionTrigger` and :class:`FreezePolicy` are the rules alone,
with no GC, tested as such; :func:`install` wires the interpreter's.
"""

import gc
import platform
import sys

from broker.core import figures
from broker.core.figures import COUNTER, GAUGE, Figure, Metric
from broker.ops import pypy_environment

DEFAULT_GROWTH = 1.5
DEFAULT_FLOOR = 32 << 20
DEFAULT_BURST = 64
FULL_THRESHOLD = 1
DEFAULT_GROWTH_TO_AUDIT = 1.25
DEFAULT_SLACK = 1.25


class MajorCollectionTrigger:
    """Decides, after each minor collection, whether to start a major one.

    ``after_minor(used, collections)`` takes the bytes the GC holds after
    ``collections`` minor collections (PyPy may report several at once) and
    answers True when a major collection should start now;
    ``after_major(live)`` says one has finished, leaving ``live`` bytes. Until
    the first major collection, the first minor collection sets the baseline.
    :meth:`heap` reports the last of each figure.
    """

    def __init__(self, growth=DEFAULT_GROWTH, floor=DEFAULT_FLOOR):
        self.growth = growth
        self.floor = floor
        self.baseline = None
        self.used = None
        self.live = None
        self.collecting = False
        self.started = 0
        self.finished = 0
        self.minor = 0

    def after_minor(self, used, collections=1):
        self.minor += collections
        self.used = used
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
        self.baseline = self.live = live
        self.finished += 1

    def stats(self):
        """Major collections started by this rule, and finished by whoever
        started them; minor collections (once there has been one, every page
        of the nursery has been used)."""
        return {"major_started": self.started, "major_finished": self.finished, "minor_collections": self.minor}

    def heap(self):
        """Bytes the GC held after the last minor collection (garbage not yet
        collected included), and after the last major one (what was live);
        None until there was one. Memory the process holds beyond the first
        is outside the GC's accounting."""
        return {"used_bytes": self.used, "live_bytes": self.live}

    FIGURES = (
        Figure("major_started", "started", Metric("gc_major_started", COUNTER, "PyPy major collections started by "
                                                  "the broker's trigger")),
        Figure("major_finished", "finished", Metric("gc_major_finished", COUNTER, "PyPy major collections finished")),
        Figure("minor_collections", "minor", Metric("gc_minor_collections", COUNTER, "PyPy minor collections")),
        Figure("heap.used_bytes", "used", Metric("gc_heap_used_bytes", GAUGE, "Bytes PyPy's GC held after the "
                                                 "last minor collection")),
        Figure("heap.live_bytes", "live", Metric("gc_heap_live_bytes", GAUGE, "Bytes live after PyPy's last major "
                                                 "collection")),
        Figure("nursery.bytes", lambda trigger: _nursery("bytes"),
               Metric("gc_nursery_bytes", GAUGE, "Size of PyPy's nursery (PYPY_GC_NURSERY, or the broker's own)")),
        Figure("nursery.set_by", lambda trigger: _nursery("set_by")),
    )


class FreezePolicy:
    """Decides when CPython freezes the tracked objects, and when it audits them.

    ``after_collection(generation, admitted)`` takes the generation just
    collected and the connections admitted so far, and answers True when
    everything should be frozen now. ``should_audit(blocks)`` takes the
    allocated memory blocks and answers True when an audit is due;
    ``audit(frozen, open_now)`` takes the frozen objects and the open
    connections and answers True when they should be thawed, collected and
    frozen again, after which ``rebased(frozen, open_now)`` measures the
    objects per connection. ``started(frozen, blocks)`` sets the base.
    """

    def __init__(self, burst=DEFAULT_BURST, growth=DEFAULT_GROWTH_TO_AUDIT, slack=DEFAULT_SLACK):
        self.burst = burst
        self.growth = growth
        self.slack = slack
        self.base = 0
        self.per_connection = None
        self.admitted_at_freeze = 0
        self.blocks_at_audit = 0
        self.freezes = 0
        self.audits = 0
        self.thaws = 0

    def started(self, frozen, blocks):
        self.base = frozen
        self.blocks_at_audit = blocks

    def after_collection(self, generation, admitted):
        if generation < 2 and (generation < 1 or admitted - self.admitted_at_freeze < self.burst):
            return False
        self.admitted_at_freeze = admitted
        self.freezes += 1
        return True

    def should_audit(self, blocks):
        if blocks <= self.growth * self.blocks_at_audit:
            self.blocks_at_audit = min(self.blocks_at_audit, blocks)
            return False
        self.blocks_at_audit = blocks
        return True

    def audit(self, frozen, open_now):
        self.audits += 1
        if self.per_connection is None:
            self.rebased(frozen, open_now)
            return False
        if frozen <= self.slack * (self.base + self.per_connection * open_now):
            return False
        self.thaws += 1
        return True

    def rebased(self, frozen, open_now):
        if open_now:
            self.per_connection = max(0.0, (frozen - self.base) / open_now)

    def stats(self):
        return figures.stats_of(self)

    FIGURES = (
        Figure("freezes", "freezes", Metric("gc_freezes", COUNTER, "Times CPython's tracked objects were frozen "
                                            "out of the collector's walks")),
        Figure("audits", "audits", Metric("gc_audits", COUNTER, "Audits of the frozen objects for cycles kept "
                                          "alive")),
        Figure("thaws", "thaws", Metric("gc_thaws", COUNTER, "Times the frozen objects were thawed and collected")),
    )


def _nursery(key):
    """What :func:`broker.ops.pypy_environment.stats` says of PyPy's nursery under ``key``; None on CPython."""
    return (pypy_environment.stats() or {}).get(key)


def install(connections, trigger=None):
    """Wire the interpreter's collector policy and return it: on PyPy,
    ``trigger`` (a new :class:`MajorCollectionTrigger` by default); on CPython,
    a :class:`CpythonFreezer` watching ``connections`` (a
    :class:`broker.core.limits.Limits`), whose ``audit_if_due`` the caller runs
    from time to time."""
    if platform.python_implementation() != "PyPy":
        return CpythonFreezer(connections).start()
    return _install_pypy(trigger)


class CpythonFreezer:
    """:class:`FreezePolicy` on CPython's collector (``gc.callbacks``)."""

    def __init__(self, connections, policy=None):
        self.connections = connections
        self.policy = policy or FreezePolicy()
        self.thresholds = gc.get_threshold()

    def start(self):
        young, middle, _ = self.thresholds
        gc.set_threshold(young, middle, FULL_THRESHOLD)
        gc.collect()
        gc.freeze()
        self.policy.started(gc.get_freeze_count(), sys.getallocatedblocks())
        gc.callbacks.append(self.on_collection)
        return self

    def stop(self):
        gc.callbacks.remove(self.on_collection)
        gc.set_threshold(*self.thresholds)
        gc.unfreeze()

    def on_collection(self, phase, info):
        if phase == "stop" and self.policy.after_collection(info["generation"], self.connections.admitted):
            gc.freeze()

    def audit_if_due(self):
        """Audit the frozen objects if memory has grown enough; not from a
        ``gc`` callback (a collection cannot run inside one)."""
        if not self.policy.should_audit(sys.getallocatedblocks()):
            return
        connections = self.connections
        if self.policy.audit(gc.get_freeze_count(), connections.open):
            gc.unfreeze()
            gc.collect()
            gc.freeze()
            self.policy.rebased(gc.get_freeze_count(), connections.open)

    def stats(self):
        return self.policy.stats()

    FIGURES = figures.through("policy", FreezePolicy.FIGURES)


def _install_pypy(trigger):
    trigger = trigger or MajorCollectionTrigger()

    def on_minor(stats):
        if trigger.after_minor(stats.total_memory_used, stats.count):
            gc.collect_step()

    def on_major(stats):
        trigger.after_major(stats.arenas_bytes + stats.rawmalloc_bytes_after)

    gc.hooks.on_gc_minor = on_minor
    gc.hooks.on_gc_collect = on_major
    return trigger
