"""A broker cluster to measure: ``N`` broker processes of one contender sharing one room through Redis.

Rules (README.rst, "Cluster through Redis"):

- With one broker there is no Redis: the broker runs as it does alone, the
  embedded default. With more, one ``redis-server`` without persistence is
  started first (:class:`loadtest.redis_server.RedisServer`) and every broker
  joins it with ``--redis``.
- Broker ``i`` is pinned to ``cpus[i % len(cpus)]`` (unpinned without CPUs);
  Redis runs unpinned, as the machine's other services do.
- Every broker gets the same ``flags`` after the contender's own (a publish
  token, say); each prints its listening line as a single broker does, so
  :func:`loadtest.servers.launch` starts them all.
- :meth:`Cluster.stop` stops the brokers, then Redis; a cluster that fails to
  start stops what it had started before raising.
"""

from loadtest import servers
from loadtest.redis_server import RedisServer


class Cluster:
    """Running brokers (:class:`loadtest.servers.Server`) and their Redis (None for one broker)."""

    def __init__(self, brokers, redis):
        self.brokers = brokers
        self.redis = redis

    @property
    def urls(self):
        """The SockJS prefix of every broker, in order."""
        return [broker.url for broker in self.brokers]

    def pids(self):
        """``{name: pid}`` of every process of the cluster: ``broker1``..., ``redis``."""
        named = {"broker%d" % (i + 1): broker.pid for i, broker in enumerate(self.brokers)}
        if self.redis is not None:
            named["redis"] = self.redis.pid
        return named

    def stop(self):
        for broker in self.brokers:
            broker.stop()
        if self.redis is not None:
            self.redis.stop()


def launch(contender, brokers, cpus=(), flags=(), timeout=60.0):
    """Start ``brokers`` processes of the broker ``contender`` (a :class:`loadtest.contenders.Contender`)."""
    redis = RedisServer() if brokers > 1 else None
    cluster = Cluster([], redis)
    joined = ["--redis", redis.url] if redis is not None else []
    try:
        for i in range(brokers):
            cpu = cpus[i % len(cpus)] if cpus else None
            cluster.brokers.append(servers.launch(list(contender.argv) + list(flags) + joined, cpu=cpu,
                                                  cwd=contender.cwd, timeout=timeout))
    except BaseException:
        cluster.stop()
        raise
    return cluster
