"""The backplane's bookkeeping without Redis: state changes, ids, backoff, refusals."""

import os
import subprocess
import sys
from checkout import ROOT




def test_without_redis_nothing_of_redis_is_imported():
    code = ("import sys; from broker import app; from broker.config import parse_args; "
            "assert app.cluster_backplane(parse_args([], environ={})) is None; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'redis'))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          env=dict(os.environ, PYTHONPATH=ROOT))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
