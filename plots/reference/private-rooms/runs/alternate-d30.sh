#!/bin/bash
# Public and private rooms runs alternated, 3 each, both interpreters in each run.
cd /work/wt/priv-bench
for round in 1 2 3; do
  for mode in public private; do
    flag=""; [ "$mode" = private ] && flag="--private"
    echo "== $mode-$round $(date -u +%H:%M:%S) $(cat /proc/loadavg)"
    PYTHONPATH=. timeout 300 .venv/bin/python -m loadtest rooms --servers broker-cpython,broker-pypy --rooms 100 \
      --viewers 2000 --duration 30 --idle-rooms 0 --server-cpus 0 --client-cpus 1 $flag \
      --out bench-runs/d30-$mode-$round.jsonl > bench-runs/d30-$mode-$round.out 2>&1
    echo "   rc=$? end $(date -u +%H:%M:%S) $(cat /proc/loadavg)"
  done
done
