"""The instructions a named room's publish costs Redis, counted: a figure a busy machine cannot blur.

Starts a redis-server (no persistence) under valgrind's callgrind on a free loopback port,
stopped at the end, then for each kind of publish sends ``--messages`` of them as a broker sends
a batch of one (the script by its SHA1, alone: :mod:`broker.cluster.room_writes`), each in its
own room, after ``--warm`` to fill its stream past its MAXLEN (``--history``, trimmed as a
broker's are), and reads callgrind's instruction count over them (``callgrind_control`` zeroes
and dumps it). The kinds: a message; a message with an ``Idempotency-Key`` (a new one each);
a counter's ``op=add``; for scale, a plain ``XADD MAXLEN ~ 100`` of the same message and a
``PING``. Instructions are Redis's own (user space), not the kernel's reading and writing of
each round trip; callgrind runs Redis some 50 times slower, so only counts mean anything here.
Every message is ``--message-bytes`` of JSON text. It prints the figures as JSON. Run it from
a checkout (docs/sizing.rst, "Rooms", quotes it)::

    PYTHONPATH=. python tools/room_instructions_in_redis.py
"""

import argparse
import decimal
import glob
import json
import os
import re
import subprocess
import tempfile

import redis

from broker.cluster import room_writes
from broker.cluster.appends import Append, Count, OnceRecord
from broker.cluster.named_rooms import RoomKeys
from broker.core.counters import Amount

from room_costs_in_redis import free_port, wait_for

EXPIRY_MS = 3600000


def script_sender(client, room, history, entry_of):
    """A function sending room ``room``'s script for ``entry_of(number)`` as a broker sends a batch of one."""
    keys = RoomKeys.of("/broadcast", room)

    def send(number):
        pipe = client.pipeline(transaction=False)
        room_writes.queue_script(pipe, keys, entry_of(number), history, [keys.channel, EXPIRY_MS, "epoch"])
        pipe.execute()
    return send


def senders(client, args, message):
    """Each kind of publish of the module's list, by its name: a function sending the ``number``th."""
    history = args.history
    return {
        "message": script_sender(client, "plain", history, lambda _: Append(message, None)),
        "message_with_idempotency_key": script_sender(
            client, "once", history, lambda number: Append(message, None, OnceRecord("key-%d" % number, "r 1 e", 600))),
        "counter_add": script_sender(
            client, "counter", history, lambda _: Count("n", "add", Amount(decimal.Decimal(1), 0), None, 100)),
        "plain_xadd": lambda _: client.xadd("plain", {"m": message}, maxlen=100, approximate=True),
        "ping": lambda _: client.ping(),
    }


def callgrind_control(command, pid):
    subprocess.run(["callgrind_control", command, str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=True)


def instructions(pid, directory):
    """The instructions callgrind counted in process ``pid`` since its last zeroing (dumped into ``directory``)."""
    for dump in glob.glob(os.path.join(directory, "callgrind.*")):
        os.remove(dump)
    callgrind_control("--dump", pid)
    total = 0
    for dump in glob.glob(os.path.join(directory, "callgrind.*")):
        with open(dump) as text:
            total += int(re.search(r"^(?:summary|totals):\s+(\d+)", text.read(), re.M).group(1))
    return total


def measure(args, client, pid, directory):
    message = json.dumps({"text": "x" * max(0, args.message_bytes - 11)})
    figures = {"message_bytes": len(message), "redis": client.info("server")["redis_version"]}
    for script in room_writes.SCRIPTS:
        client.script_load(script.text)
    for name, send in senders(client, args, message).items():
        for number in range(args.warm):
            send(-1 - number)
        callgrind_control("--zero", pid)
        for number in range(args.messages):
            send(number)
        figures[name] = round(instructions(pid, directory) / args.messages)
    return figures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--messages", type=int, default=1000)
    parser.add_argument("--warm", type=int, default=1100)
    parser.add_argument("--history", type=int, default=1000)
    parser.add_argument("--message-bytes", type=int, default=90)
    args = parser.parse_args()
    port = free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(["valgrind", "--tool=callgrind", "--callgrind-out-file=%s/callgrind.%%p" % directory,
                                   "redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", directory],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            client = redis.Redis(host="127.0.0.1", port=port)
            wait_for(client.ping, 120.0)
            print(json.dumps(measure(args, client, server.pid, directory), indent=1))
        finally:
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
