"""What a named room costs Redis: its keys' bytes, and Redis's CPU a message, measured.

Starts a redis-server (no persistence) and one broker joined to it (``--redis``) on free
loopback ports, both stopped at the end, then through the broker's ``POST /publish?room=``:

* ``--rooms`` rooms with one message each: MEMORY USAGE over each room's keys, the mean;
* ``--full-rooms`` rooms with ``--full-messages`` each (past the stream's MAXLEN ~): the same;
* the bytes of Redis a channel subscribed to costs, ``--channels`` of them on one connection, as a
  broker's rooms with viewers are;
* Redis's CPU a named room's publish over ``--messages`` publishes, one at a time: INFO's
  used_cpu_user + used_cpu_sys a publish, and from INFO commandstats each command's calls a
  publish and usec_per_call (EVALSHA's holds the script's commands); the same for as many
  publishes ``--concurrency`` at a time in ``--busy-rooms`` rooms, which the broker writes a few
  to a transaction (``exec`` a publish: one over the publishes a transaction); the same for as
  many plain ``XADD MAXLEN ~ 100`` of the same message sent by this script.

Every message is ``--message-bytes`` of JSON text; any other flag is the broker's (``--history
100``). It prints the figures as JSON. Run it from a checkout, so that the broker run is the
checkout's (docs/sizing.rst, "Rooms", quotes it)::

    PYTHONPATH=. python tools/room_costs_in_redis.py
"""

import argparse
import concurrent.futures
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

import redis

TOKEN = "measure"


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_for(condition, seconds=30.0):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            if condition():
                return
        except (OSError, redis.ConnectionError):
            pass
        time.sleep(0.1)
    raise RuntimeError("not ready within %g s" % seconds)


def publish(port, room, message):
    request = urllib.request.Request("http://127.0.0.1:%d/publish?room=%s" % (port, room), data=message.encode(),
                                     headers={"Authorization": "Bearer " + TOKEN,
                                              "Content-Type": "application/json"})
    with urllib.request.urlopen(request) as answer:
        answer.read()


def healthy(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port) as answer:
        return answer.status == 200


def room_bytes(client, room):
    """MEMORY USAGE (all samples) over every key of ``room``, and how many keys it has."""
    keys = list(client.scan_iter(match="sockjs-broker:*:room:{%s}*" % room, count=1000))
    return sum(client.memory_usage(key, samples=0) for key in keys), len(keys)


def mean_room_bytes(client, rooms):
    """The mean of :func:`room_bytes` over ``rooms`` (names), and the first's number of keys."""
    sizes = [room_bytes(client, room) for room in rooms]
    return round(sum(size for size, _ in sizes) / len(sizes)), sizes[0][1]


def cpu_seconds(client):
    info = client.info("cpu")
    return info["used_cpu_user"] + info["used_cpu_sys"]


def per_message(client, messages, send, concurrency=1):
    """Redis's CPU a message (us) over ``messages`` calls of ``send(number)``, ``concurrency`` at
    a time, and each command called at least every 20th message: its calls a message and its
    usec_per_call."""
    client.config_resetstat()
    before = cpu_seconds(client)
    with concurrent.futures.ThreadPoolExecutor(concurrency) as pool:
        for _ in pool.map(send, range(messages)):
            pass
    used = cpu_seconds(client) - before
    stats = client.info("commandstats")
    return {"cpu_us_per_message": round(used / messages * 1e6, 1),
            "commands_per_message": {name[len("cmdstat_"):]: round(stat["calls"] / messages, 2)
                                     for name, stat in stats.items() if stat["calls"] >= messages / 20},
            "usec_per_call": {name[len("cmdstat_"):]: stat["usec_per_call"] for name, stat in stats.items()
                              if stat["calls"] >= messages / 20}}


def measure(args, client, port):
    """The figures of the module's list, publishing through the broker at ``port``."""
    message = json.dumps({"text": "x" * max(0, args.message_bytes - 11)})
    figures = {"message_bytes": len(message), "redis": client.info("server")["redis_version"]}
    rooms = ["one-%d" % number for number in range(args.rooms)]
    for room in rooms:
        publish(port, room, message)
    figures["bytes_a_room_one_message"], figures["keys_a_room"] = mean_room_bytes(client, rooms)
    rooms = ["full-%d" % number for number in range(args.full_rooms)]
    for room in rooms:
        for _ in range(args.full_messages):
            publish(port, room, message)
    figures["bytes_a_room_full"], _ = mean_room_bytes(client, rooms)
    figures["stream_entries_full"] = client.xlen(next(client.scan_iter(match="*{full-0}:stream")))
    figures["named_room_publish"] = per_message(client, args.messages,
                                                lambda _: publish(port, "hot", message))
    figures["named_room_publish_concurrent"] = per_message(
        client, args.messages, lambda number: publish(port, "busy-%d" % (number % args.busy_rooms), message),
        args.concurrency)
    figures["plain_xadd"] = per_message(client, args.messages, lambda _: client.xadd(
        "plain", {"m": message}, maxlen=100, approximate=True))
    figures["bytes_a_channel_subscribed"] = channel_bytes(client, args.channels)
    return figures


def channel_bytes(client, channels):
    """Redis's used_memory, a channel, once one pub/sub connection SUBSCRIBEd to ``channels`` room channels."""
    before = client.info("memory")["used_memory"]
    listener = client.pubsub()
    for first in range(0, channels, 1000):
        listener.subscribe(*("sockjs-broker:/broadcast:room:{sub-%d}" % number
                             for number in range(first, min(channels, first + 1000))))
    wait_for(lambda: client.pubsub_numsub("sockjs-broker:/broadcast:room:{sub-%d}" % (channels - 1))[0][1] == 1)
    used = client.info("memory")["used_memory"] - before
    listener.close()
    return round(used / channels)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rooms", type=int, default=1000)
    parser.add_argument("--full-rooms", type=int, default=10)
    parser.add_argument("--full-messages", type=int, default=1200)
    parser.add_argument("--messages", type=int, default=5000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--busy-rooms", type=int, default=100)
    parser.add_argument("--message-bytes", type=int, default=90)
    parser.add_argument("--channels", type=int, default=100000)
    args, broker_flags = parser.parse_known_args()
    redis_port, broker_port = free_port(), free_port()
    with tempfile.TemporaryDirectory() as directory:
        server = subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                   "--appendonly", "no", "--dir", directory], stdout=subprocess.DEVNULL)
        broker = None
        try:
            client = redis.Redis(host="127.0.0.1", port=redis_port)
            wait_for(client.ping)
            broker = subprocess.Popen([sys.executable, "-m", "broker", "--host", "127.0.0.1", "--port",
                                       str(broker_port), "--redis", "redis://127.0.0.1:%d/0" % redis_port,
                                       "--max-rooms", str(args.rooms + args.full_rooms + args.busy_rooms + 1)]
                                      + broker_flags,
                                      env=dict(os.environ, BROKER_PUBLISH_TOKEN=TOKEN))
            wait_for(lambda: healthy(broker_port))
            print(json.dumps(measure(args, client, broker_port), indent=1))
        finally:
            for process in (broker, server):
                if process is not None:
                    process.terminate()
                    process.wait()


if __name__ == "__main__":
    main()
