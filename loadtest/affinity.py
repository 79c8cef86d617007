"""Pin a process to one CPU, also where ``os.sched_setaffinity`` is missing (PyPy 3.9)."""

import os
import subprocess


def pin(pid, cpu):
    """Restrict process ``pid`` (0: this one) and its threads to CPU ``cpu`` (None: left where it is)."""
    if cpu is None:
        return
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, {cpu})
        return
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid or os.getpid())],
                   check=True, stdout=subprocess.DEVNULL)


def default_cpus():
    """The CPUs a server and its load run on unless told otherwise: the first
    two this process may run on (0 and 1 on a whole machine; a container's
    cpuset may give others), or the one twice where there is only one."""
    allowed = sorted(allowed_cpus())
    return allowed[0], allowed[min(1, len(allowed) - 1)]


def allowed_cpus():
    """The CPU numbers this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return os.sched_getaffinity(0)
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("Cpus_allowed_list:"):
                return _cpu_list(line.split(":", 1)[1])
    raise RuntimeError("no Cpus_allowed_list in /proc/self/status")


def _cpu_list(text):
    """``0-3,6`` as {0, 1, 2, 3, 6}."""
    cpus = set()
    for part in text.strip().split(","):
        first, _, last = part.partition("-")
        cpus.update(range(int(first), int(last or first) + 1))
    return cpus
