"""Results files: one JSON object per line, each a record of :mod:`loadtest.records` with its ``"type"``.

:class:`ResultsFile` writes and flushes line by line, so an interrupted run keeps
everything measured so far. :func:`read` loads a file back as records, older
files included.
"""

import datetime
import json
import os
import sys

from broker.runtime import interpreter
from loadtest import procstat, records
import loadtest


def default_path(directory="results"):
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return os.path.join(directory, stamp + ".jsonl")


def run_record(url, transport, command=None):
    """The first line of a results file: now, ``command`` (default: this one), this client and machine."""
    return records.Run(started=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                       command=list(sys.argv if command is None else command),
                       client={"interpreter": interpreter(), "version": loadtest.__version__},
                       machine=procstat.machine(), url=url, transport=transport)


class ResultsFile:
    """Append records to a JSON-lines file, one flushed line each."""

    def __init__(self, path):
        self.path = path
        directory = os.path.dirname(path)
        if directory:
            os.makedirs(directory, exist_ok=True)
        self._file = open(path, "a")

    def write(self, record):
        """Append ``record`` (a :class:`loadtest.records.Record`) as one line, on disk at once."""
        self._file.write(json.dumps(record.as_dict()) + "\n")
        self._file.flush()

    def close(self):
        self._file.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def read(path):
    """Every record of a results file, in order (:func:`loadtest.records.parse_older`: unknown types left out)."""
    with open(path) as f:
        parsed = [records.parse_older(json.loads(line)) for line in f if line.strip()]
    return [record for record in parsed if record is not None]
