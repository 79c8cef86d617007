"""A contender's processes, started as one: a single server, or brokers joined through Redis.

Rules (docs/deployment.rst, "Redis"):

- A contender that is not ``joined`` runs as one process. A joined one runs ``brokers``
  processes after one ``redis-server`` without persistence, or the contender's ``backplane``
  (a primary, replicas and Sentinels), that every broker joins with ``--redis``.
- Process ``i`` is pinned to ``cpus[i % len(cpus)]``, Redis (all of it) to ``cpus[0]``. Every
  process gets the same ``flags`` after the contender's own.
- :meth:`Cluster.stop` stops the servers, then Redis; a cluster that fails to start stops
  what it had started before raising. A broker restarted starts as it was, on its port.
"""

import signal

from loadtest import affinity
from loadtest.contenders import child_process
from loadtest.contenders.redis_server import RedisServer


class Cluster:
    """Running servers (:class:`loadtest.contenders.child_process.LaunchedServer`) and their Redis (None when not joined)."""

    def __init__(self, servers_, redis):
        self.servers = servers_
        self.redis = redis

    @property
    def urls(self):
        return [server.url for server in self.servers]

    def pids(self):
        """``{name: pid}`` of every process: ``broker1``, ``broker2``..., then ``redis``."""
        named = {"broker%d" % (i + 1): server.pid for i, server in enumerate(self.servers)}
        if self.redis is not None:
            named["redis"] = self.redis.pid
        return named

    def terminate(self, index, timeout, signum=signal.SIGTERM):
        """One SIGTERM (or ``signum``) to broker ``index``: its exit code, or None (then stopped)."""
        server = self.servers[index]
        code = server.terminate(timeout, signum)
        if code is None:
            server.stop()
        return code

    def start_again(self, index):
        """Start broker ``index``, which has exited, again as it was (ServerError if it does not listen)."""
        self.servers[index] = self.servers[index].started_again()

    def stop(self):
        for server in self.servers:
            server.stop()
        if self.redis is not None:
            self.redis.stop()


def one_redis(cpu):
    """A :class:`RedisServer` pinned to ``cpu``: what a cluster joins unless its contender says otherwise."""
    redis = RedisServer()
    affinity.pin(redis.pid, cpu)
    return redis


def launch(contender, brokers=1, cpus=(), flags=(), timeout=60.0):
    """Start ``contender`` (a :class:`loadtest.contenders.registry.Contender`): a :class:`Cluster`."""
    if brokers > 1 and not contender.joined:
        raise ValueError("%s runs as one process; a cluster needs cluster-cpython or cluster-pypy" % contender.label)
    redis = (contender.backplane or one_redis)(cpus[0] if cpus else None) if contender.joined else None
    cluster = Cluster([], redis)
    try:
        joined = [] if redis is None else ["--redis", redis.url]
        for i in range(brokers):
            cluster.servers.append(child_process.launch(
                list(contender.argv) + list(flags) + joined, cpu=cpus[i % len(cpus)] if cpus else None,
                cwd=contender.cwd, timeout=timeout))
    except BaseException:
        cluster.stop()
        raise
    return cluster
