"""What a PyPy broker's process sets once, as it starts: the size of PyPy's
nursery, whether glibc's malloc gives PyPy's freed arenas back, and when
PyPy's JIT compiles.

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
stream soak).

The JIT. PyPy compiles a loop after 1,039 runs and a function after 1,619,
a bridge after a guard failed 200 times, and traces up to 6,000 operations
at a time, while the event loop waits. A broker that a deploy, a crash or a
burst of new connections meets with thousands of sessions in flight traces
Tornado's request path for the first time then: traces of tens of
milliseconds each, a core's worth of them for seconds, every client's
messages waiting behind. :data:`JIT_PARAMETERS` compiles sooner and in
shorter traces (BENCHMARKS.rst, "Hostile clients"). Rules:

* On PyPy, the broker's command line sets each variable of
  :data:`ENVIRONMENT` that is unset and, if it set one, executes the same
  command again, in the same process (same pid: systemd, ``taskset`` and
  ``prlimit`` see no change), with the same arguments, interpreter options
  included (read back from ``/proc/self/cmdline``). It has to: PyPy reads its
  variable once, as the interpreter starts, and glibc as the process starts;
  neither has a call to change it afterwards. This happens first, before the
  broker imports anything.
* An operator's value of any of them is kept as it is.
* The JIT's parameters are set in the running process, once its flags are
  read (:func:`set_jit_parameters`): ``--pypy-jit``'s if given, else none if
  the interpreter's own options (``pypy3 --jit ...``) set them, else
  :data:`JIT_PARAMETERS`.
* On CPython nothing happens (CPython's own allocator maps its arenas
  itself, and it has no JIT); where ``/proc/self/cmdline`` cannot be read,
  the variables are left as they are, and the JIT takes
  :data:`JIT_PARAMETERS` unless ``--pypy-jit`` is given.
* :func:`stats` reports the nursery the interpreter actually has, and who
  chose it; :func:`jit_stats` the JIT's parameters, and who set them.
"""

import os
import platform
import sys

NURSERY_VARIABLE = "PYPY_GC_NURSERY"
NURSERY = "4MB"
MMAP_THRESHOLD_VARIABLE = "MALLOC_MMAP_THRESHOLD_"
MMAP_THRESHOLD = "131072"
ENVIRONMENT = {NURSERY_VARIABLE: NURSERY, MMAP_THRESHOLD_VARIABLE: MMAP_THRESHOLD}
# PyPy's defaults: threshold=1039, function_threshold=1619, trace_eagerness=200, trace_limit=6000.
JIT_PARAMETERS = "threshold=200,function_threshold=300,trace_eagerness=50,trace_limit=2000"
JIT_OPTION = "--jit"
JIT_FLAG = "--pypy-jit"
# What set_jit_parameters did: {"parameters", "set_by"}; None before it, or on CPython.
_jit = None


def on_pypy():
    return platform.python_implementation() == "PyPy"


def exec_with_broker_environment():
    """On PyPy with a variable of :data:`ENVIRONMENT` unset: run this command
    again with it set (does not return). Otherwise: nothing."""
    unset = {name: value for name, value in ENVIRONMENT.items() if name not in os.environ}
    if not on_pypy() or not unset:
        return
    argv = _command_line()
    if argv is not None:
        os.execve(sys.executable, argv, dict(os.environ, **unset))


def set_jit_parameters(parameters=None):
    """On PyPy: set the JIT's ``parameters`` (``--pypy-jit``) if given; else,
    unless the interpreter's options set the JIT's, :data:`JIT_PARAMETERS`.
    On CPython: nothing."""
    global _jit
    if not on_pypy():
        return
    if parameters is None and _jit_set_by_option():
        _jit = {"parameters": None, "set_by": JIT_OPTION}
        return
    import pypyjit

    _jit = ({"parameters": JIT_PARAMETERS, "set_by": "broker"} if parameters is None
            else {"parameters": parameters, "set_by": JIT_FLAG})
    pypyjit.set_param(_jit["parameters"])


def unknown_jit_parameters(parameters):
    """The names in ``parameters`` (``name=value,...``) that this PyPy's JIT
    does not have; none on CPython, which has no JIT."""
    if not on_pypy():
        return []
    import pypyjit

    return [name for name in (item.partition("=")[0] for item in parameters.split(","))
            if name not in pypyjit.defaults and name != "off"]


def jit_stats():
    """On PyPy: ``{"parameters": ..., "set_by": "broker" | "--pypy-jit" | "--jit"}``
    (parameters None when the interpreter's ``--jit`` set them), or None if the
    broker's command line did not run; None on CPython."""
    return None if _jit is None else dict(_jit)


def _command_line():
    """This process's command line, interpreter options included; None if unreadable."""
    try:
        with open("/proc/self/cmdline", "rb") as f:
            return [os.fsdecode(arg) for arg in f.read().split(b"\0")[:-1]]
    except OSError:
        return None


def _jit_set_by_option():
    """Whether the interpreter's options, before the module or script it runs, include ``--jit``."""
    for arg in (_command_line() or [])[1:]:
        if arg == JIT_OPTION:
            return True
        if arg in ("-m", "-c") or not arg.startswith("-"):
            return False
    return False


def stats():
    """``{"bytes": size, "set_by": "broker" | "PYPY_GC_NURSERY"}`` on PyPy, else None."""
    if not on_pypy():
        return None
    from broker import _internals

    return {"bytes": _internals.pypy_nursery_bytes(),
            "set_by": "broker" if os.environ.get(NURSERY_VARIABLE) == NURSERY else NURSERY_VARIABLE}
