"""On PyPy the broker chooses its nursery, whatever cache the CPU reports,
keeps glibc's malloc giving PyPy's freed arenas back, and sets when the JIT
compiles; an operator's ``PYPY_GC_NURSERY``, ``MALLOC_MMAP_THRESHOLD_`` and
``--jit`` win. A CPU's report is made
up for a broker by mounting another ``/proc/cpuinfo`` over the real one in a
mount namespace of its own (``unshare``, as root)."""

import os
import platform
import subprocess
import sys

import pytest

from broker.ops import pypy_environment
from loadtest.procstat import rss_kb

from checkout import ROOT

pytestmark = pytest.mark.skipif(platform.python_implementation() != "PyPy",
                                reason="PyPy's settings (on CPython the broker sets none)")

SMALL_CACHE_KB = 1024
LARGE_CACHE_KB = 491520  # reported by some Xeon servers: PyPy would pick a 240 MB nursery
UNSET = dict.fromkeys(pypy_environment.ENVIRONMENT)
# In a mount namespace of its own, the file in $0 replaces /proc/cpuinfo, then the rest runs.
REPORTING = ["unshare", "--mount", "sh", "-c", 'mount --bind "$0" /proc/cpuinfo && exec "$@"']


@pytest.fixture
def cpuinfo_reporting(tmp_path):
    """``(cache_kb) -> argv prefix`` under which /proc/cpuinfo reports that cache;
    skipped where mount namespaces are refused (failed in CI)."""
    def prefix(cache_kb):
        path = tmp_path / ("cpuinfo-%d" % cache_kb)
        with open("/proc/cpuinfo") as real:
            path.write_text("".join("cache size\t: %d KB\n" % cache_kb if line.startswith("cache size") else line
                                    for line in real))
        return REPORTING + [str(path)]

    probe = subprocess.run(prefix(SMALL_CACHE_KB) + ["true"], capture_output=True, text=True)
    if probe.returncode != 0:
        reason = "cannot make up /proc/cpuinfo here (unshare --mount needs root): " + probe.stderr.strip()
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return prefix


def pypy_nursery_bytes(argv_prefix, env):
    """The nursery a bare PyPy gets under ``argv_prefix`` with ``env``."""
    done = subprocess.run(argv_prefix + [sys.executable, "-c", "from broker import _internals; "
                                         "print(_internals.pypy_nursery_bytes())"],
                          capture_output=True, text=True, env=dict(env, PYTHONPATH=ROOT), check=True)
    return int(done.stdout)


def environ_of(pid):
    with open("/proc/%d/environ" % pid, "rb") as f:
        return dict(entry.decode().partition("=")[::2] for entry in f.read().split(b"\0") if entry)


def test_the_broker_nursery_does_not_follow_the_cpus_cache(start_broker, cpuinfo_reporting):
    environ = {name: value for name, value in os.environ.items() if name != pypy_environment.NURSERY_VARIABLE}
    # What PyPy alone would do on each machine: the made-up report is what it reads.
    assert pypy_nursery_bytes(cpuinfo_reporting(LARGE_CACHE_KB), environ) >= 64 << 20
    brokers = {cache_kb: start_broker(env=UNSET, under=cpuinfo_reporting(cache_kb))
               for cache_kb in (SMALL_CACHE_KB, LARGE_CACHE_KB)}
    for broker in brokers.values():
        assert broker.stats()["gc"]["nursery"] == {"bytes": 4 << 20, "set_by": "broker"}
        # The same process: the command ran again in place, with the variable set.
        assert environ_of(broker.server.pid)[pypy_environment.NURSERY_VARIABLE] == pypy_environment.NURSERY
    small, large = (rss_kb(brokers[cache_kb].server.pid) for cache_kb in (SMALL_CACHE_KB, LARGE_CACHE_KB))
    assert abs(large - small) <= 0.1 * small, "idle RSS %d KiB (1 MiB cache), %d KiB (480 MiB)" % (small, large)


def test_an_operators_nursery_is_kept(start_broker):
    broker = start_broker(env={pypy_environment.NURSERY_VARIABLE: "2MB"}, interpreter_options=["--jit", "off"])
    assert broker.stats()["gc"]["nursery"] == {"bytes": 2 << 20, "set_by": pypy_environment.NURSERY_VARIABLE}
    assert "--jit" in open("/proc/%d/cmdline" % broker.server.pid).read().split("\0")


def test_the_broker_sets_the_jits_parameters(start_broker):
    broker = start_broker(env=UNSET)
    assert broker.stats()["jit"] == {"parameters": pypy_environment.JIT_PARAMETERS, "set_by": "broker"}


def test_an_operators_jit_parameters_are_kept(start_broker):
    for options in (["--jit", "threshold=500"], ["-u", "--jit", "off"]):
        broker = start_broker(interpreter_options=options)
        assert broker.stats()["jit"] == {"parameters": None, "set_by": "--jit"}, options
    broker = start_broker("--pypy-jit", "threshold=1039,trace_limit=6000", interpreter_options=["--jit", "off"])
    assert broker.stats()["jit"] == {"parameters": "threshold=1039,trace_limit=6000", "set_by": "--pypy-jit"}


def test_jit_parameters_pypy_does_not_have_are_refused():
    done = subprocess.run([sys.executable, "-m", "broker", "--pypy-jit", "threshold=200,tracing_limit=5"],
                          capture_output=True, text=True, env=dict(os.environ, PYTHONPATH=ROOT), timeout=60)
    assert done.returncode == 2
    assert "this PyPy's JIT has no tracing_limit" in done.stderr


def test_the_brokers_jit_parameters_are_pypys():
    """A parameter PyPy no longer has would stop every PyPy broker as it starts."""
    assert pypy_environment.unknown_jit_parameters(pypy_environment.JIT_PARAMETERS) == []


def test_the_broker_fixes_the_threshold_of_mallocs_own_mappings(start_broker):
    broker = start_broker(env=UNSET)
    environ = environ_of(broker.server.pid)
    assert environ[pypy_environment.MMAP_THRESHOLD_VARIABLE] == pypy_environment.MMAP_THRESHOLD


def test_an_operators_malloc_threshold_is_kept_and_the_nursery_still_set(start_broker):
    broker = start_broker(env={pypy_environment.NURSERY_VARIABLE: None,
                               pypy_environment.MMAP_THRESHOLD_VARIABLE: "262144"})
    environ = environ_of(broker.server.pid)
    assert environ[pypy_environment.MMAP_THRESHOLD_VARIABLE] == "262144"
    assert broker.stats()["gc"]["nursery"] == {"bytes": 4 << 20, "set_by": "broker"}


def test_interpreter_options_survive_the_new_start(start_broker):
    broker = start_broker(env=UNSET, interpreter_options=["--jit", "off"])
    assert broker.stats()["gc"]["nursery"]["set_by"] == "broker"
    with open("/proc/%d/cmdline" % broker.server.pid) as f:
        argv = f.read().split("\0")
    assert argv[1:5] == ["--jit", "off", "-m", "broker"], argv
