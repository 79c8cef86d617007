"""PyPy's nursery: the broker's own size, not one read from the CPU's cache.

PyPy allocates every new object in its nursery and, unless
``PYPY_GC_NURSERY`` says otherwise, sizes it from the "cache size" line of
``/proc/cpuinfo``. Many x86 servers report their L3 cache there, up to
hundreds of MiB: a broker then touches a nursery of hundreds of MB (its RSS
grows by that much without a byte leaking, and each of its processes pays it
again), and its minor collections sweep memory far larger than any cache.
The size that suits the broker does not depend on the machine's cache
(BENCHMARKS.rst, "PyPy's nursery"). Rules:

* On PyPy, when ``PYPY_GC_NURSERY`` is unset, the broker's command line sets
  it to :data:`NURSERY` and executes the same command again, in the same
  process (same pid: systemd, ``taskset`` and ``prlimit`` see no change), with
  the same arguments, interpreter options included (read back from
  ``/proc/self/cmdline``). It has to: PyPy reads the variable once, as the
  interpreter starts, and has no call that resizes the nursery afterwards.
  This happens first, before the broker imports anything.
* An operator's ``PYPY_GC_NURSERY`` is kept as it is.
* On CPython, or where ``/proc/self/cmdline`` cannot be read, nothing happens.
* :func:`stats` reports the nursery the interpreter actually has, and who
  chose it.
"""

import os
import platform
import sys

VARIABLE = "PYPY_GC_NURSERY"
NURSERY = "4MB"


def on_pypy():
    return platform.python_implementation() == "PyPy"


def exec_with_broker_nursery():
    """On PyPy without ``PYPY_GC_NURSERY``: run this command again with it set
    to :data:`NURSERY` (does not return). Otherwise: nothing."""
    if not on_pypy() or VARIABLE in os.environ:
        return
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [os.fsdecode(arg) for arg in f.read().split(b"\0")[:-1]]
    except OSError:
        return
    os.execve(sys.executable, argv, dict(os.environ, **{VARIABLE: NURSERY}))


def stats():
    """``{"bytes": size, "set_by": "broker" | "PYPY_GC_NURSERY"}`` on PyPy, else None."""
    if not on_pypy():
        return None
    from broker import _internals

    return {"bytes": _internals.pypy_nursery_bytes(),
            "set_by": "broker" if os.environ.get(VARIABLE) == NURSERY else VARIABLE}
