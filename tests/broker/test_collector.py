"""The rule that starts PyPy's major collections, without a GC; and its wiring."""

import gc
import platform

import pytest

from broker.collector import MajorCollectionTrigger, install

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
    assert trigger.stats() == {"major_started": 1, "major_finished": 0}


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
    assert trigger.stats() == {"major_started": 2, "major_finished": 1}


def test_a_major_collection_started_by_pypy_itself_also_resets_the_baseline():
    trigger = MajorCollectionTrigger(growth=2.0, floor=10 * MB)
    trigger.after_minor(100 * MB)
    trigger.after_major(40 * MB)
    assert trigger.after_minor(81 * MB)


@pytest.mark.skipif(platform.python_implementation() == "PyPy", reason="CPython only")
def test_cpython_is_left_alone():
    assert install() is None


@pytest.mark.skipif(platform.python_implementation() != "PyPy", reason="PyPy's GC hooks")
def test_pypy_hooks_drive_the_trigger():
    """Names the PyPy GC API the collector relies on, should an upgrade remove it."""
    for name in ("hooks", "collect_step"):
        assert hasattr(gc, name), "gc.%s is gone" % name
    saved = gc.hooks.on_gc_minor, gc.hooks.on_gc_collect
    try:
        trigger = install(MajorCollectionTrigger(growth=1.0, floor=0))
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
