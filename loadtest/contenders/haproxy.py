"""Debian's ``haproxy`` run by the shipped ``deploy/haproxy.cfg``, in front of brokers on loopback.

Rules:

- The config is the shipped one with only what must differ here changed: binds on free
  loopback ports, a ``server`` line per broker, no system-service settings, the log on its
  own output, ``maxconn`` fitted to this process's open-files limit.
- It runs in the foreground (``-db``) and is ready when every broker is UP in every backend,
  by its Prometheus exporter. One that lost a port to another process is started again on
  fresh ones (``BIND_ATTEMPTS`` in all): its ports are final once :meth:`HAProxy.wait_ready` returns.
- Its log, one line a request, is kept in a file.
"""

import collections
import os
import re
import resource
import shutil
import subprocess
import time
import urllib.request

from loadtest.contenders.child_process import BIND_ATTEMPTS, ServerError, free_port, stop_process
from loadtest.contenders.registry import REPO_ROOT

HAPROXY = shutil.which("haproxy", path=os.environ.get("PATH", "") + ":/usr/sbin:/usr/bin") or "/usr/sbin/haproxy"
HOWTO = "haproxy is missing: apt-get install haproxy"
SYSTEM_SERVICE_ONLY = ("chroot", "user", "group", "stats socket")
_SERVER_LINE = re.compile(r"^\s*server broker(\d+) ")
# The shipped binds, by port: the public side, its TLS side, the backends' publishing side,
# haproxy's Prometheus exporter.
BINDS = {"80": "port", "443": "tls_port", "8000": "publish_port", "8404": "metrics_port"}
_PORT_TAKEN = "Address already in use"
TLS_LINE = "#tls "
# A line of haproxy's HTTP log: ... Tq/Tw/Tc/Tr/Tt status bytes ...
_LOGGED_STATUS = re.compile(r" -?\d+/-?\d+/-?\d+/-?\d+/\+?\d+ (\d{3}) ")


def shipped_config():
    """``deploy/haproxy.cfg`` beside the load client's package, or in the working directory; else ServerError."""
    for root in (REPO_ROOT, os.getcwd()):
        path = os.path.join(root, "deploy", "haproxy.cfg")
        if os.path.exists(path):
            return path
    raise ServerError("no deploy/haproxy.cfg beside the load client or here: run it from a checkout")


def haproxy_config(ports, broker_ports, tls_pem=None, source=None):
    """The config at ``source`` on ``ports``, a ``server`` line per broker port; ``#tls`` lines on with ``tls_pem``."""
    with open(source or shipped_config()) as f:
        lines = f.read().splitlines()
    out = []
    section = None
    for line in lines:
        if tls_pem is not None and line.lstrip().startswith(TLS_LINE):
            line = line.replace(TLS_LINE, "", 1).replace("/etc/haproxy/certs/broker.pem", tls_pem)
        words = line.split()
        if line and not line[0].isspace():
            section = words[0]
        if section == "global" and line.strip().startswith(SYSTEM_SERVICE_ONLY):
            continue
        if section == "global" and words[:1] == ["log"]:
            out.append("    log stdout format short local0")
            continue
        if section == "global" and words[:1] == ["maxconn"]:
            out.append("    maxconn %d" % max_connections())
            continue
        if words[:1] == ["bind"]:
            port = ports[BINDS[words[1].rsplit(":", 1)[1]]]
            out.append(("    bind 127.0.0.1:%d %s" % (port, " ".join(words[2:]))).rstrip())
            continue
        server = _SERVER_LINE.match(line)
        if server:
            if out[-1].lstrip().startswith("server broker"):
                continue
            template = server.group(1)
            out.extend(line.replace(template, str(port)) for port in broker_ports)
            continue
        out.append(line)
    return "\n".join(out) + "\n"


def max_connections():
    """The ``maxconn`` one haproxy can hold here: two descriptors a connection, under the hard open-files limit."""
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1] // 2 - 100


class HAProxy:
    """``haproxy -db`` in front of ``broker_ports``, its config in ``directory``; ``origin``: its public side."""

    def __init__(self, broker_ports, directory, tls_pem=None, source=None, cpu=None):
        if not os.access(HAPROXY, os.X_OK):
            raise ServerError(HOWTO)
        self.broker_ports = list(broker_ports)
        self.directory, self._tls_pem, self._source, self._cpu = directory, tls_pem, source, cpu
        self.log = None
        self.attempts = 0
        self._start()

    def _start(self):
        """haproxy on ports free now, with a fresh log."""
        self.attempts += 1
        ports = {name: free_port() for name in BINDS.values()}
        self.port, self.tls_port = ports["port"], ports["tls_port"]
        self.publish_port, self.metrics_port = ports["publish_port"], ports["metrics_port"]
        self.origin = "http://127.0.0.1:%d" % self.port
        self.tls_origin = "https://127.0.0.1:%d" % self.tls_port
        self.publish_origin = "http://127.0.0.1:%d" % self.publish_port
        self.config = os.path.join(self.directory, "haproxy.cfg")
        with open(self.config, "w") as f:
            f.write(haproxy_config(ports, self.broker_ports, self._tls_pem, self._source))
        if self.log is not None:
            self.log.close()
        self.log = open(os.path.join(self.directory, "haproxy.log"), "w+")
        # Pinned from the start, every thread of it: haproxy starts a thread a CPU as it begins.
        pinned = [] if self._cpu is None else ["taskset", "-c", str(self._cpu)]
        self.process = subprocess.Popen(pinned + [HAPROXY, "-db", "-f", self.config], stdout=self.log,
                                        stderr=subprocess.STDOUT)

    def output(self):
        """What haproxy has written so far: its log and its complaints."""
        self.log.seek(0)
        return self.log.read()

    def statuses(self):
        """``{status: answers}`` of every request logged so far."""
        self.log.seek(0)
        counts = collections.Counter()
        for line in self.log:
            logged = _LOGGED_STATUS.search(line)
            if logged:
                counts[int(logged.group(1))] += 1
        return counts

    def server_states(self):
        """``{(backend, server name): "UP" or another state}`` from haproxy's exporter."""
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        states = {}
        for match in re.finditer(r'^haproxy_server_status\{proxy="([^"]+)",server="([^"]+)",'
                                 r'state="([A-Z]+)"\} 1$', text, re.MULTILINE):
            states[(match.group(1), match.group(2))] = match.group(3)
        return states

    def wait_ready(self, timeout=15.0):
        """Until every broker is UP in every backend (ServerError with haproxy's output if not in ``timeout`` s)."""
        deadline = time.monotonic() + timeout
        want = {(backend, "broker%d" % p) for backend in ("brokers", "sessions") for p in self.broker_ports}
        while True:
            if self.process.poll() is not None:
                if _PORT_TAKEN in self.output() and self.attempts < BIND_ATTEMPTS:
                    self._start()
                    continue
                raise ServerError("haproxy exited:\n" + self.output())
            try:
                states = self.server_states()
            except OSError:
                states = {}
            if all(states.get(key) == "UP" for key in want):
                return
            if time.monotonic() > deadline:
                raise ServerError("brokers not UP in haproxy: %r\n%s" % (states, self.output()))
            time.sleep(0.05)

    def stop(self):
        stop_process(self.process)
        self.log.close()
