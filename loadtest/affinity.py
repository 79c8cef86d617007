"""Pin a process to one CPU, also where ``os.sched_setaffinity`` is missing (PyPy 3.9)."""

import os
import subprocess


def pin(pid, cpu):
    """Restrict process ``pid`` (0: this one) and its threads to CPU number ``cpu``;
    a ``cpu`` of None leaves it where it is."""
    if cpu is None:
        return
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, {cpu})
        return
    subprocess.run(["taskset", "-a", "-p", "-c", str(cpu), str(pid or os.getpid())],
                   check=True, stdout=subprocess.DEVNULL)
