"""Results files: one JSON object per line, each with a ``"type"`` (see the project brief).

:class:`ResultsFile` writes and flushes line by line, so an interrupted run keeps
everything measured so far. :func:`read` loads a file back.
"""

import datetime
import json
import os
import sys

import loadtest
from loadtest import procstat, runtime


def default_path(directory="results"):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.join(directory, stamp + ".jsonl")


def run_record(url, transport, command=None):
    """The first line of a results file."""
    return {
        "type": "run",
        "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "command": list(sys.argv if command is None else command),
        "client": {"interpreter": runtime.interpreter(), "version": loadtest.__version__},
        "machine": procstat.machine(),
        "url": url,
        "transport": transport,
    }


def server_record(server, runtime=None, pid=None, cpu=None):
    return {"type": "server", "server": server, "runtime": runtime, "pid": pid, "cpu": cpu}


class ResultsFile:
    """Append records to a JSON-lines file, one flushed line each."""

    def __init__(self, path):
        self.path = path
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._file = open(path, "a")

    def write(self, record):
        self._file.write(json.dumps(record, sort_keys=False) + "\n")
        self._file.flush()

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read(path):
    """Every record of a results file, in order."""
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
