"""Facts of the running process that the broker and its load client both report.

Rules:

- :func:`interpreter` is the one name of an interpreter (``CPython 3.11.7``,
  ``PyPy 7.3.11 (Python 3.9.16)``): the broker's ``/stats`` shows it, results
  files put a server's beside the client's, and ``compare`` tells CPython
  from PyPy by its prefix.
- Standard library only, like :mod:`broker.protocol.frames` and :mod:`broker.flags`:
  the load client imports these three modules of the broker and nothing else
  (``.importlinter``), and
  ``compare`` imports this one in every candidate interpreter it probes,
  before it knows what that interpreter has installed.
"""

import platform
import resource
import sys


def interpreter():
    """``CPython 3.11.7`` or ``PyPy 7.3.11 (Python 3.9.16)``."""
    name = platform.python_implementation()
    if name == "PyPy":
        v = sys.pypy_version_info
        return "PyPy %d.%d.%d (Python %s)" % (v.major, v.minor, v.micro, platform.python_version())
    return "%s %s" % (name, platform.python_version())


def raise_open_files_limit():
    """Every connection is a file descriptor: use the whole hard limit, and return it."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]
