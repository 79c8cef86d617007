"""The rules of both collectors, without a GC (PyPy's major collections, CPython's
freezes and audits); and their wiring."""

import gc
import platform

import pytest

from broker.core.limits import Limits
from broker.ops.gc_policy import CpythonFreezer, FreezePolicy, MajorCollectionTrigger, install

MB = 1 << 20


def test_the_first_minor_collection_sets_the_baseline():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    assert not trigger.after_minor(100 * MB)
    assert trigger.baseline == 100 * MB


def test_a_major_collection_starts_past_growth_times_the_baseline():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    trigger.after_minor(100 * MB)
    assert not trigger.after_minor(200 * MB)
    assert trigger.after_minor(200 * MB + 1)
    assert trigger.stats() == {"major_started": 1, "major_finished": 0, "minor_collections": 3}


def test_a_small_heap_may_still_grow_by_the_floor():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    trigger.after_minor(1 * MB)
    assert not trigger.after_minor(11 * MB)
    assert trigger.after_minor(11 * MB + 1)


def test_one_collection_at_a_time_then_the_live_size_is_the_new_baseline():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    trigger.after_minor(100 * MB)
    assert trigger.after_minor(300 * MB)
    assert not trigger.after_minor(400 * MB), "a second start while the first runs"
    trigger.after_major(150 * MB)
    assert trigger.baseline == 150 * MB
    assert not trigger.after_minor(300 * MB)
    assert trigger.after_minor(301 * MB)
    assert trigger.stats() == {"major_started": 2, "major_finished": 1, "minor_collections": 5}


def test_minor_collections_reported_together_count_each():
    trigger = MajorCollectionTrigger()
    trigger.after_minor(10 * MB, 3)
    trigger.after_minor(10 * MB)
    assert trigger.stats()["minor_collections"] == 4


def test_a_major_collection_started_by_pypy_itself_also_resets_the_baseline():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    trigger.after_minor(100 * MB)
    trigger.after_major(40 * MB)
    assert trigger.after_minor(81 * MB)


def test_the_heap_is_the_last_minor_and_major_collections_figures():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    assert trigger.heap() == {"used_bytes": None, "live_bytes": None}
    trigger.after_minor(100 * MB)
    trigger.after_minor(120 * MB)
    assert trigger.heap() == {"used_bytes": 120 * MB, "live_bytes": None}
    trigger.after_major(40 * MB)
    trigger.after_minor(50 * MB)
    assert trigger.heap() == {"used_bytes": 50 * MB, "live_bytes": 40 * MB}


def test_everything_is_frozen_after_a_full_collection():
    policy = FreezePolicy(burst=64)
    assert not policy.after_collection(0, admitted=0)
    assert not policy.after_collection(1, admitted=0)
    assert policy.after_collection(2, admitted=0)
    assert policy.stats() == {"freezes": 1, "audits": 0, "thaws": 0}


def test_a_burst_of_connections_is_frozen_after_a_collection_of_generation_1():
    policy = FreezePolicy(burst=64)
    assert not policy.after_collection(0, admitted=100), "generation 0 promotes nothing to generation 2"
    assert policy.after_collection(1, admitted=64)
    assert not policy.after_collection(1, admitted=127), "counted from the last freeze"
    assert policy.after_collection(2, admitted=127)
    assert not policy.after_collection(1, admitted=190)
    assert policy.after_collection(1, admitted=191)


def test_an_audit_is_due_once_memory_has_grown_from_its_lowest():
    policy = FreezePolicy(growth=1.25)
    policy.started(frozen=1000, blocks=100000)
    assert not policy.should_audit(125000)
    assert policy.should_audit(125001)
    assert not policy.should_audit(80000), "connections left"
    assert not policy.should_audit(100000)
    assert policy.should_audit(100001), "a quarter above the lowest since the audit"


def test_the_first_audit_only_measures():
    policy = FreezePolicy(slack=1.25)
    policy.started(frozen=10000, blocks=1)
    assert not policy.audit(frozen=10000 + 150 * 50, open_now=50)
    assert policy.per_connection == 150


def test_frozen_objects_the_open_connections_account_for_stay_frozen():
    policy = FreezePolicy(slack=1.25)
    policy.started(frozen=10000, blocks=1)
    policy.rebased(frozen=10000 + 150 * 1000, open_now=1000)
    assert not policy.audit(frozen=10000 + 150 * 20000, open_now=20000)
    assert not policy.audit(frozen=10000 + 150 * 500, open_now=500), "closed connections were freed"
    assert not policy.audit(frozen=int(1.25 * (10000 + 150 * 200)), open_now=200)


def test_frozen_objects_that_outlive_their_connections_are_thawed():
    policy = FreezePolicy(slack=1.25)
    policy.started(frozen=10000, blocks=1)
    policy.rebased(frozen=10000 + 150 * 1000, open_now=1000)
    assert policy.audit(frozen=10000 + 150 * 1000, open_now=500), "500 closed connections still frozen"
    assert policy.stats() == {"freezes": 0, "audits": 1, "thaws": 1}


@pytest.mark.skipif(platform.python_implementation() == "PyPy", reason="CPython's gc.freeze")
def test_cpython_freezes_after_a_burst_and_thaws_frozen_cycles_at_an_audit():
    """Names the CPython GC API the freezer relies on, should an upgrade remove it."""
    limits = Limits(100000)
    freezer = CpythonFreezer(limits, FreezePolicy(burst=10, growth=1.25)).start()
    try:
        base = gc.get_freeze_count()
        assert base > 0, "start-up objects are frozen"
        held = []
        for _ in range(20):
            limits.admit(None)
            held.append([[] for _ in range(50)])
        gc.collect(1)
        frozen = gc.get_freeze_count()
        assert frozen >= base + 20 * 50, "gc.callbacks did not freeze after generation 1"
        freezer.policy.blocks_at_audit = 0
        freezer.audit_if_due()
        assert freezer.stats()["audits"] == 1 and freezer.stats()["thaws"] == 0, "the first audit measures"
        del held
        assert gc.get_freeze_count() < frozen - 20 * 50, "frozen objects are freed by reference counting"
        cycles = []
        for _ in range(20):
            cycle = [[] for _ in range(10000)]
            cycle.append(cycle)
            cycles.append(cycle)
        gc.collect()
        frozen = gc.get_freeze_count()
        assert frozen >= base + 20 * 10000, "frozen after a full collection"
        del cycles, cycle
        assert gc.get_freeze_count() > frozen - 20 * 10000, "frozen cycles are not collected"
        freezer.audit_if_due()
        assert freezer.stats()["audits"] == 2 and freezer.stats()["thaws"] == 1, "memory grew: audited"
        assert gc.get_freeze_count() < frozen // 2, "frozen cycles were collected at the thaw"
    finally:
        freezer.stop()


@pytest.mark.skipif(platform.python_implementation() != "PyPy", reason="PyPy's GC hooks")
def test_pypy_hooks_drive_the_trigger():
    """Names the PyPy GC API the collector relies on, should an upgrade remove it."""
    for name in ("hooks", "collect_step"):
        assert hasattr(gc, name), "gc.%s is gone" % name
    saved = gc.hooks.on_gc_minor, gc.hooks.on_gc_collect
    try:
        trigger = install(Limits(1), MajorCollectionTrigger(growth=1.0, floor=0))
        junk = []
        for _ in range(20):
            junk.append([object() for _ in range(100000)])
            gc.collect_step()
        del junk
        gc.collect()
        assert trigger.baseline is not None, "on_gc_minor or total_memory_used is gone"
        assert trigger.finished >= 1, "on_gc_collect, arenas_bytes or rawmalloc_bytes_after is gone"
        assert trigger.started >= 1
    finally:
        gc.hooks.on_gc_minor, gc.hooks.on_gc_collect = saved
