"""What a server runs on, as the load client finds out.

Rules:

- A server's runtime is named as :func:`broker.runtime.interpreter` names
  this process's: the broker says it in ``/stats``; any other server is
  named by its executable.
- Standard library only, as :mod:`broker.runtime`.
"""

import json
import urllib.parse
import urllib.request

from loadtest import procstat

STATS_TIMEOUT_S = 2.0


def server_runtime(url, pid):
    """``interpreter`` from the ``/stats`` of the server of ``url`` (the broker has it), else its executable's name."""
    parts = urllib.parse.urlsplit(url)
    stats_url = "%s://%s/stats" % (parts.scheme, parts.netloc)
    try:
        with urllib.request.urlopen(stats_url, timeout=STATS_TIMEOUT_S) as response:
            return json.loads(response.read())["interpreter"]
    except (OSError, ValueError, KeyError, TypeError):
        return procstat.runtime_of(pid) if pid else None
