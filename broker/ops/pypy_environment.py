"""What a PyPy broker's process reads once, as it starts: the size of PyPy's
nursery, and whether glibc's malloc gives PyPy's freed arenas back.

The nursery. PyPy allocates every new object in its nursery and, unless
``PYPY_GC_NURSERY`` says otherwise, sizes it from the "cache size" line of
``/proc/cpuinfo``. Many x86 servers report their L3 cache there, up to
hundreds of MiB: a broker then touches a nursery of hundreds of MB (its RSS
grows by that much without a byte leaking, and each of its processes pays it
again), and its minor collections sweep memory far larger than any cache.
The size that suits the broker does not depend on the machine's cache
(BENCHMARKS.rst, "PyPy's nursery").

The arenas. PyPy keeps the objects that survive a minor collection in arenas
of 512 KiB, which it frees once a major collection has emptied them. glibc's
malloc serves each with a mapping of its own, unmapped when freed, until the
first is freed: from then on it raises its threshold to the size freed and
serves arenas from its heap, which it gives back to the system only from its
top. A broker's RSS then rises to the highest its heap has been between two
major collections, and stays there. ``MALLOC_MMAP_THRESHOLD_`` fixes the
threshold at glibc's default, so every arena stays a mapping of its own: RSS
falls after each major collection (BENCHMARKS.rst, "Transports", the 19,000
stream soak). Rules:

* On PyPy, the broker's command line sets each variable of
  :data:`ENVIRONMENT` that is unset and, if it set one, executes the same
  command again, in the same process (same pid: systemd, ``taskset`` and
  ``prlimit`` see no change), with the same arguments, interpreter options
  included (read back from ``/proc/self/cmdline``). It has to: PyPy reads its
  variable once, as the interpreter starts, and glibc as the process starts;
  neither has a call to change it afterwards. This happens first, before the
  broker imports anything.
* An operator's value of any of them is kept as it is.
* On CPython, or where ``/proc/self/cmdline`` cannot be read, nothing happens
  (CPython's own allocator maps its arenas itself).
* :func:`stats` reports the nursery the interpreter actually has, and who
  chose it.
"""

import os
import platform
import sys

NURSERY_VARIABLE = "PYPY_GC_NURSERY"
NURSERY = "4MB"
MMAP_THRESHOLD_VARIABLE = "MALLOC_MMAP_THRESHOLD_"
MMAP_THRESHOLD = "131072"
ENVIRONMENT = {NURSERY_VARIABLE: NURSERY, MMAP_THRESHOLD_VARIABLE: MMAP_THRESHOLD}


def on_pypy():
    return platform.python_implementation() == "PyPy"


def exec_with_broker_environment():
    """On PyPy with a variable of :data:`ENVIRONMENT` unset: run this command
    again with it set (does not return). Otherwise: nothing."""
    unset = {name: value for name, value in ENVIRONMENT.items() if name not in os.environ}
    if not on_pypy() or not unset:
        return
    try:
        with open("/proc/self/cmdline", "rb") as f:
            argv = [os.fsdecode(arg) for arg in f.read().split(b"\0")[:-1]]
    except OSError:
        return
    os.execve(sys.executable, argv, dict(os.environ, **unset))


def stats():
    """``{"bytes": size, "set_by": "broker" | "PYPY_GC_NURSERY"}`` on PyPy, else None."""
    if not on_pypy():
        return None
    from broker import _internals

    return {"bytes": _internals.pypy_nursery_bytes(),
            "set_by": "broker" if os.environ.get(NURSERY_VARIABLE) == NURSERY else NURSERY_VARIABLE}
