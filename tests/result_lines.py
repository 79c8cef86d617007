"""A results file as written: its JSON objects, one per line, for tests that check the file itself."""

import json


def read(path):
    with open(str(path)) as f:
        return [json.loads(line) for line in f if line.strip()]
