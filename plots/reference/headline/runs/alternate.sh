#!/bin/sh
# The headline's runs: every contender in one compare command, the servers' order reversed in
# the even runs; the load average before and after each command in run-N.out. ROUNDS="4 5"
# runs more.
set -e
FWD=broker-cpython,broker-pypy,sockjs-node,sockjs-go,sockjs-tornado
REV=sockjs-tornado,sockjs-go,sockjs-node,broker-pypy,broker-cpython
DIR=plots/reference/headline/runs
for N in ${ROUNDS:-1 2 3}; do
    if [ $((N % 2)) = 0 ]; then SERVERS=$REV; else SERVERS=$FWD; fi
    {
        echo "run $N: $(date -u +%FT%TZ) $(cat /proc/loadavg)"
        python -m loadtest compare --servers $SERVERS --measure cpu --cpu-load 1000x10 --cpu-seconds 15 --warm-up 10 --transport websocket,xhr-streaming --out $DIR/streams-$N.jsonl
        echo "streams $N done: $(date -u +%FT%TZ) $(cat /proc/loadavg)"
        python -m loadtest compare --servers $SERVERS --measure cpu --cpu-load 1000x5 --cpu-seconds 15 --warm-up 10 --transport xhr-polling --out $DIR/polling-$N.jsonl
        echo "polling $N done: $(date -u +%FT%TZ) $(cat /proc/loadavg)"
        python -m loadtest compare --servers $SERVERS --measure idle --idle-connections 5000 --transport websocket --out $DIR/idle-$N.jsonl
        echo "idle $N done: $(date -u +%FT%TZ) $(cat /proc/loadavg)"
    } >$DIR/run-$N.out 2>&1
done
