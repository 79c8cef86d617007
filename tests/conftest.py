import os
import socket
import sys
import urllib.parse

import pytest

from broker.runtime import raise_open_files_limit
from loadtest.contenders import haproxy, redis_server
from loadtest.contenders.child_process import free_port, launch

pytest.register_assert_rewrite("sockjs_clients", "deployment", "memory_plateau", "live_room", "probes")

import deployment  # noqa: E402  (after its assertions are set to be rewritten)
from checkout import ROOT
from running_broker import RunningBroker, http_request

# The tests hold hundreds of sockets at once, and many machines start a shell
# with a soft limit of 1024 open files: use the hard limit, as the broker and
# the load client do, so the suite does not depend on the shell's.
raise_open_files_limit()


# The modules whose bounds assume no other test beside them: they measure latency,
# CPU, memory or rates (the hostile suite's canaries, load runs that judge their own
# steps, compare, memory plateaus, a Redis filled to a bound, heartbeats a second, a
# drain's spread, the SockJS suite's one-second reads), or install sockjs-node's modules. They are marked ``alone``; tox runs the rest side by side
# (``pytest -m "not alone" -n 4``: they mostly wait on brokers' timeouts), then these
# one at a time (``-m alone``). A test of such a bound among others of its module is marked
# ``alone`` where it is defined.
ALONE = tuple("tests/" + path for path in (
    "hostile/test_accept_rate.py", "hostile/test_connection_limits.py", "hostile/test_descriptor_exhaustion.py",
    "hostile/test_flood.py", "hostile/test_oversized_headers.py", "hostile/test_slow_consumers.py",
    "hostile/test_slowloris.py", "hostile/test_websocket_pings.py",
    "loadtest/test_abuse_runs.py", "loadtest/test_rolling.py", "loadtest/test_soak_runs.py", "loadtest/test_sweep.py",
    "compare/", "broker/test_churn.py", "broker/test_pypy_environment.py", "broker/test_heartbeats.py",
    "broker/test_shutdown.py", "broker/test_start_cost.py", "plots/test_plots_from_compare.py",
    "cluster/test_redis_memory.py", "cluster/test_room_memory.py", "conformance/test_sockjs_protocol.py",
    "deploy/test_rolling_restart.py",
    "test_without_server_stack.py"))
# PyPy's memory plateaus, among those: tox runs them under PyPy with the smallest and a large
# nursery a machine may give it (``pypy3-nursery*``), and so not a third time in ``pypy3``.
NURSERY = tuple("tests/" + path for path in (
    "hostile/test_slow_consumers.py", "hostile/test_slowloris.py", "broker/test_churn.py",
    "broker/test_pypy_environment.py", "loadtest/test_soak_runs.py"))
assert all(os.path.exists(os.path.join(ROOT, path)) for path in ALONE + NURSERY), "a path named here is gone"
assert all(path.startswith(ALONE) for path in NURSERY), "a nursery test runs alone too"


def pytest_collection_modifyitems(items):
    for item in items:
        path = os.path.relpath(str(item.fspath), ROOT)
        if path.startswith(ALONE):
            item.add_marker(pytest.mark.alone)
        if path.startswith(NURSERY):
            item.add_marker(pytest.mark.nursery)


def pytest_sessionfinish(session, exitstatus):
    """A tier with none of the selected tests in it passes (``-m`` deselected them all)."""
    if exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED and session.config.getoption("markexpr"):
        session.exitstatus = pytest.ExitCode.OK


@pytest.fixture
def start_server():
    """Start servers by argv (run from the checkout); each is stopped after the test."""
    started = []

    def start(*argv, env=None):
        server = launch(list(argv), env=dict(env or {}, PYTHONPATH=ROOT))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def start_broker(start_server):
    """Start brokers with extra flags (and, by keyword, extra environment, an
    open-files limit, soft and hard, set with ``prlimit``, options for the
    interpreter, and a command to run it under, such as ``unshare``). Each is
    stopped after the test, and fails it if it logged a traceback, up to its
    exit; it closes its clients at once when stopped (``--drain-seconds 0``)
    unless the flags say otherwise."""
    started = []

    def start(*flags, env=None, open_files=None, interpreter_options=(), under=()):
        limit = ["prlimit", "--nofile=%d:%d" % (open_files, open_files)] if open_files else []
        server = start_server(*under, *limit, sys.executable, *interpreter_options, "-m", "broker", "--host",
                              "127.0.0.1", "--port", "0", "--log-level", "warning", "--drain-seconds", "0", *flags,
                              env=env)
        started.append(server)
        return RunningBroker(server)

    yield start
    for server in started:
        server.stop()
        assert "Traceback" not in server.output, server.output[-4000:]


@pytest.fixture
def redis_installed():
    """Skips the test where redis-server is missing, except in CI, which installs it (and fails)."""
    if redis_server.REDIS_SERVER is None:
        if os.environ.get("CI"):
            pytest.fail(redis_server.HOWTO, pytrace=False)
        pytest.skip(redis_server.HOWTO)


@pytest.fixture
def port_taken_first(monkeypatch):
    """``take(module)``: the first port ``module``'s ``free_port`` gives is one a socket here
    already listens on, as if another process had bound it since it was found free; returns
    that port. The sockets are closed after the test."""
    held = []

    def take(module):
        sock = socket.socket()
        held.append(sock)
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        picks = iter([sock.getsockname()[1]])
        monkeypatch.setattr(module, "free_port", lambda: next(picks, None) or free_port())
        return sock.getsockname()[1]

    yield take
    for sock in held:
        sock.close()


@pytest.fixture
def start_redis(redis_installed):
    """Start redis-server processes (``directory``: persist there); each is stopped after the test."""
    started = []

    def start(directory=None):
        server = redis_server.RedisServer(directory)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def tls_files(tmp_path):
    """A test authority's certificate for 127.0.0.1 and localhost, as files (:mod:`tls_files`)."""
    from tls_files import TLSFiles
    return TLSFiles(tmp_path)


@pytest.fixture
def broker(start_broker):
    return start_broker("--publish-token", "s3cret", "--replay", "0")


class Origin:
    """Where HTTP requests go, ``request`` as a broker's: the proxy's side for backends."""

    def __init__(self, origin):
        self.origin = origin

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text body) of one HTTP request to ``origin``."""
        return http_request(self.origin + path, method, body, headers)


class Cluster:
    """Brokers behind haproxy or nginx: ``origin`` and ``url`` (the SockJS prefix) are
    the proxy's public side, ``backend_side`` its side for backends, where they publish
    (an :class:`Origin`), ``brokers`` each :class:`RunningBroker` behind it;
    ``launch(port)`` starts one more broker as they were started, on ``port``."""

    def __init__(self, proxy, brokers, launch):
        self.proxy = proxy
        self.brokers = brokers
        self.origin = proxy.origin
        self.url = proxy.origin + "/broadcast"
        self.backend_side = Origin(proxy.publish_origin)
        self._launch = launch

    def start_again(self, *numbers, timeout=30.0):
        """Brokers ``numbers``, whose processes have exited, started again on their ports as
        they were first started, as a deploy restarts them; returns the last once haproxy has
        every broker UP."""
        for n in numbers:
            assert self.brokers[n].server.process.poll() is not None, "broker %d is still running" % n
            self.brokers[n] = self._launch(self.proxy.broker_ports[n])
        self.proxy.wait_ready(timeout)
        return self.brokers[numbers[-1]]

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text body) of one HTTP request through haproxy."""
        return http_request(self.origin + path, method, body, headers)


    def sessions(self):
        """The SockJS sessions each broker holds, in the order of ``brokers``."""
        return [broker.stats()["sessions"] for broker in self.brokers]


@pytest.fixture
def start_cluster(start_server, tmp_path):
    """``start(n, *flags, tls_pem=None, front="haproxy")``: n brokers run by
    ``deploy/sockjs-broker@.service`` (with extra flags) and haproxy by ``deploy/haproxy.cfg``
    in front of them (its TLS lines on, with ``tls_pem``), every broker UP; with
    ``front="nginx"``, nginx by ``deploy/nginx.conf`` (its TLS lines on with ``tls``, a
    :class:`tls_files.TLSFiles`). Skipped without the proxy, failed in CI (which installs it)."""
    proxies = []

    def start(n=2, *flags, tls_pem=None, front="haproxy", tls=None):
        if front == "haproxy":
            deployment.require_haproxy()
        else:
            deployment.require_nginx()

        def launch(port):
            argv, environment = deployment.broker_command(sys.executable, port)
            return RunningBroker(start_server(*argv, "--log-level", "warning", *flags, env=environment))

        brokers = [launch(0) for _ in range(n)]
        ports = [urllib.parse.urlsplit(broker.url).port for broker in brokers]
        directory = tmp_path / ("%s%d" % (front, len(proxies)))
        directory.mkdir()
        if front == "haproxy":
            proxy = haproxy.HAProxy(ports, str(directory), tls_pem, deployment.HAPROXY_CONFIG)
        else:
            proxy = deployment.Nginx(ports, str(directory), tls)
        proxies.append(proxy)
        proxy.wait_ready()
        return Cluster(proxy, brokers, launch)

    yield start
    for proxy in proxies:
        proxy.stop()


# Records as ``python -m loadtest soak --churn`` writes them: the summary tables and the figures read them.
SOAKED = ["broker-cpython", "broker-pypy"]


def soak_sample(server, elapsed_s, rss_mb):
    return {"type": "soak_sample", "server": server, "level": 100, "rate": 300.0, "elapsed_s": elapsed_s,
            "server_rss_kb": int(rss_mb * 1024), "server_msgs_per_s": 30000.0, "rtt_ms": {"p50": 1.0, "p99": 4.0},
            "lost": 0, "dropped": 0}


def soak_summary(server, start_mb, final_mb, per_h, pct, verdict, lost=0, end="completed"):
    return {"type": "soak", "server": server, "clients": 100, "rate": 300.0, "sample_s": 30.0, "warmup_s": 60.0,
            "duration_s": 600.0, "samples": 20, "rss_after_warmup_kb": int(start_mb * 1024), "warmup_at_s": 60.0,
            "final_rss_kb": int(final_mb * 1024), "final_at_s": 600.0, "growth_mb": final_mb - start_mb,
            "growth_mb_per_h": per_h, "growth_pct": pct, "verdict": verdict, "lost": lost, "dropped": 0, "end": end}


@pytest.fixture
def soak_records():
    """What ``python -m loadtest soak --churn`` writes for two servers: one flat, one growing until it died."""
    broker, pypy = SOAKED
    return (
        [{"type": "run", "started": "2026-11-21T10:00:00+00:00", "machine": {"cpu_model": "AMD EPYC", "cores": 2}},
         {"type": "server", "server": broker, "runtime": "CPython 3.11.7"}]
        + [soak_sample(broker, 30.0 * n, 40 + (1 if n > 2 else 0)) for n in range(1, 21)]
        + [soak_summary(broker, 41, 41, 0.0, 0.0, "flat"),
           {"type": "churn_wave", "server": broker, "wave": 1, "opened": {"websocket": 100}, "failed": {},
            "held_connections": 300, "held_rss_kb": 45 * 1024, "connections": 100, "rss_kb": 44 * 1024,
            "open_cpu_us": 450.0},
           {"type": "churn", "server": broker, "waves": 5, "size": 100, "hold_s": 2.0, "baseline_connections": 0,
            "baseline_rss_kb": 41 * 1024, "final_connections": 0, "final_rss_kb": 42 * 1024, "settled": True,
            "settle_s": 6.2, "growth_mb": 1.0, "verdict": "flat"},
           {"type": "server", "server": pypy, "runtime": "PyPy 7.3.11 (Python 3.9.16)"}]
        + [soak_sample(pypy, 30.0 * n, 100 + 10 * n) for n in range(1, 21)]
        + [soak_summary(pypy, 120, 300, 1080.0, 150.0, "growing", lost=7, end="server gone: the server died")]
    )


BY_TRANSPORT = (  # (transport, server, us/msg, p99 ms, idle KiB/conn)
    ("websocket", "broker-cpython", 4.0, 2.0, 10.0), ("websocket", "sockjs-node", 8.0, 3.0, 20.0),
    ("xhr-polling", "broker-cpython", 30.0, 40.0, 15.0), ("xhr-polling", "sockjs-node", 20.0, 50.0, 30.0),
)


@pytest.fixture
def by_transport_records():
    """What ``compare --measure cpu,idle --transport websocket,xhr-polling`` writes for two servers."""
    lines = [{"type": "run", "started": "2026-11-25T15:00:00+00:00", "transport": "websocket,xhr-polling"}]
    for server, runtime in (("broker-cpython", "CPython 3.11.7"), ("sockjs-node", "Node 20.20.2")):
        lines.append({"type": "server", "server": server, "runtime": runtime})
        for transport, _, us, p99, _ in (row for row in BY_TRANSPORT if row[1] == server):
            lines.append({"type": "cpu_per_msg", "server": server, "transport": transport, "level": 1000,
                          "rate": 20.0, "cpu_us_per_msg": us, "rtt_ms": {"p50": p99 / 2, "p99": p99}, "lost": 0,
                          "reopened": 0 if transport == "websocket" else 5000})
        for transport, _, _, _, kb in (row for row in BY_TRANSPORT if row[1] == server):
            lines.append({"type": "idle_rss", "server": server, "transport": transport, "connections": 100,
                          "rss_per_conn_kb": kb})
    return lines + [{"type": "floor", "sends": 100, "cpu_us_per_send": 2.0}]
