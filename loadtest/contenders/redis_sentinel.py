"""A Redis primary, its replicas and the Sentinels that watch them: Debian's ``redis-server``
and ``redis-sentinel`` as child processes on free loopback ports, for failover tests and drills.

Rules:

- The Sentinels take the primary for down after :data:`DOWN_AFTER_MS` of silence and
  agree by a quorum of two. Ready means every Sentinel knows every replica and the other
  Sentinels, and every replica is in sync: a failover can happen.
- Every node is pinned to the group's ``cpu`` (None: not pinned); the files of the replicas
  and Sentinels live in a ``directory`` given, or in a temporary one the group removes.
- A node killed keeps its port taken until the group stops (:meth:`RedisNode.kill`).
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import redis

from loadtest import affinity
from loadtest.contenders.child_process import ServerError, free_port, stop_process
from loadtest.contenders.redis_server import REDIS_SERVER

REDIS_SENTINEL = shutil.which("redis-sentinel", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin")
HOWTO = "redis-sentinel is missing: apt-get install redis-sentinel"
PRIMARY = "room"
DOWN_AFTER_MS = 1000
FAILOVER_TIMEOUT_MS = 5000


class RedisNode:
    """One ``redis-server`` or ``redis-sentinel`` process on ``port``."""

    def __init__(self, argv, port, cpu=None):
        self.argv = argv
        self.port = port
        self.process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        affinity.pin(self.process.pid, cpu)
        self.client = redis.Redis(host="127.0.0.1", port=port, socket_timeout=2, decode_responses=True)
        self._held = None

    def kill(self):
        """SIGKILL, as in a crash; its port stays taken by a silent listener, lest another test's Redis
        started on it be taken for this one come back."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()
        self._held = socket.socket()
        self._held.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._held.bind(("127.0.0.1", self.port))
        self._held.listen(1)

    def stop(self):
        self.client.close()
        if self._held is not None:
            self._held.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)  # a stopped process cannot end
            stop_process(self.process)


def _server(directory, cpu, replica_of=None):
    """A redis-server on ``cpu``; a replica writes the copy it syncs from in ``directory``, its own."""
    port = free_port()
    directory = os.path.join(str(directory), "redis-%d" % port)
    os.mkdir(directory)
    argv = [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir",
            directory, "--daemonize", "no", "--loglevel", "warning", "--repl-diskless-sync", "yes",
            "--repl-diskless-sync-delay", "0"]
    if replica_of is not None:
        argv += ["--replicaof", "127.0.0.1", str(replica_of)]
    return RedisNode(argv, port, cpu)


def _sentinel(directory, cpu, primary_port, quorum):
    port = free_port()
    config = os.path.join(str(directory), "sentinel-%d.conf" % port)
    with open(config, "w") as lines:
        lines.write("port %d\nbind 127.0.0.1\ndaemonize no\nloglevel warning\n"
                    "sentinel monitor %s 127.0.0.1 %d %d\n"
                    "sentinel down-after-milliseconds %s %d\n"
                    "sentinel failover-timeout %s %d\n"
                    % (port, PRIMARY, primary_port, quorum, PRIMARY, DOWN_AFTER_MS, PRIMARY, FAILOVER_TIMEOUT_MS))
    return RedisNode([REDIS_SENTINEL, config], port, cpu)


def _listed(reply):
    """A Sentinel's list of nodes, each a flat list of names and values, as dicts."""
    return [dict(zip(fields[::2], fields[1::2])) for fields in reply]


def _primary(sentinel):
    """The address ``sentinel`` gives for the primary: ``[host, port]``."""
    return sentinel.client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", PRIMARY)


class SentinelGroup:
    """A primary, its replicas and Sentinels; ``url``: a joining broker's ``--redis``, ``pid``: the first primary's."""

    def __init__(self, directory=None, replicas=2, sentinels=3, cpu=None):
        if REDIS_SENTINEL is None:
            raise ServerError(HOWTO)
        self._temporary = tempfile.TemporaryDirectory(prefix="sentinels-") if directory is None else None
        directory = directory if directory is not None else self._temporary.name
        primary = _server(directory, cpu)
        self.pid = primary.process.pid
        self.nodes = [primary] + [_server(directory, cpu, primary.port) for _ in range(replicas)]
        self.sentinels = [_sentinel(directory, cpu, primary.port, 2) for _ in range(sentinels)]
        self.nodes += self.sentinels
        self.url = "redis+sentinel://%s/%s" % (",".join("127.0.0.1:%d" % s.port for s in self.sentinels), PRIMARY)

    @property
    def servers(self):
        return [node for node in self.nodes if node not in self.sentinels]

    def primary(self):
        """The server the Sentinels name as the primary now."""
        host, port = _primary(self.sentinels[0])
        return next(node for node in self.servers if node.port == int(port))

    def wait_ready(self, timeout=30.0):
        """Until every Sentinel knows every replica and every other Sentinel, and the replicas are in sync."""
        deadline = time.monotonic() + timeout
        replicas, others = len(self.servers) - 1, len(self.sentinels) - 1
        while not self._ready(replicas, others):
            if time.monotonic() > deadline:
                raise ServerError("the Sentinels did not find each other in %.0f s" % timeout)
            time.sleep(0.1)

    def _ready(self, replicas, others):
        try:
            for sentinel in self.sentinels:
                known = _listed(sentinel.client.execute_command("SENTINEL", "REPLICAS", PRIMARY))
                if len(known) < replicas or any("s_down" in r["flags"] for r in known):
                    return False
                if len(_listed(sentinel.client.execute_command("SENTINEL", "SENTINELS", PRIMARY))) < others:
                    return False
            return self.primary().client.info("replication")["connected_slaves"] == replicas
        except (redis.RedisError, StopIteration):
            return False

    def wait_failover(self, old, timeout=30.0):
        """Until every Sentinel names a primary other than ``old``, and it answers as one; returns it."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                named = {tuple(_primary(sentinel)) for sentinel in self.sentinels}
                if len(named) == 1 and int(named.pop()[1]) != old.port:
                    new = self.primary()
                    if new.client.info("replication")["role"] == "master":
                        return new
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise ServerError("no failover within %.0f s" % timeout)
            time.sleep(0.05)

    def stop(self):
        for node in self.nodes:
            node.stop()
        if self._temporary is not None:
            self._temporary.cleanup()


def ready_group(cpu=None):
    """A :class:`SentinelGroup` on ``cpu``, once ready to fail over (else stopped, and ServerError)."""
    group = SentinelGroup(cpu=cpu)
    try:
        group.wait_ready()
    except BaseException:
        group.stop()
        raise
    return group
