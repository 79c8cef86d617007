"""What a process runs on: this one's interpreter and open-files limit, a server's runtime.

Rules:

- :func:`interpreter` names this interpreter exactly as the broker's ``/stats``
  does (``CPython 3.11.7``, ``PyPy 7.3.11 (Python 3.9.16)``): results files put
  the two side by side, and ``compare`` tells CPython from PyPy by the prefix.
- Standard library only: ``compare`` imports this module in every candidate
  interpreter it probes, before it knows what that interpreter has installed.
"""

import json
import platform
import resource
import sys
import urllib.parse
import urllib.request

from loadtest import procstat

STATS_TIMEOUT_S = 2.0


def interpreter():
    """``CPython 3.11.7`` or ``PyPy 7.3.11 (Python 3.9.16)``."""
    name = platform.python_implementation()
    if name == "PyPy":
        v = sys.pypy_version_info
        return "PyPy %d.%d.%d (Python %s)" % (v.major, v.minor, v.micro, platform.python_version())
    return "%s %s" % (name, platform.python_version())


def raise_open_files_limit():
    """Every connection is a file descriptor: use the whole hard limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def server_runtime(url, pid):
    """``interpreter`` from the ``/stats`` of the server of ``url`` (the broker has it), else its executable's name."""
    parts = urllib.parse.urlsplit(url)
    stats_url = "%s://%s/stats" % (parts.scheme, parts.netloc)
    try:
        with urllib.request.urlopen(stats_url, timeout=STATS_TIMEOUT_S) as response:
            return json.loads(response.read())["interpreter"]
    except (OSError, ValueError, KeyError, TypeError):
        return procstat.runtime_of(pid) if pid else None
