"""The shipped deployment files (``deploy/``), run by tests as they are.

A test runs the brokers by the systemd unit's ``ExecStart`` and ``Environment`` and haproxy by
``deploy/haproxy.cfg``, with only what must differ on a test machine changed:
the interpreter and ports (ephemeral, on loopback), and none of the global
settings of a system service (chroot, user, stats socket), haproxy's log on its
own output instead of syslog, and its ``maxconn`` fitted to the open-files
limit a test process has (haproxy, not root here, cannot raise it).
"""

import os
import re
import resource
import shlex
import socket
import subprocess
import time

import pytest

from loadtest.contenders.child_process import stop_process
from checkout import ROOT

DEPLOY = os.path.join(ROOT, "deploy")
HAPROXY = "/usr/sbin/haproxy"
SYSTEM_SERVICE_ONLY = ("chroot", "user", "group", "stats socket")
_SERVER_LINE = re.compile(r"^\s*server broker(\d+) ")


def require_haproxy():
    """Skip the calling test where haproxy is missing; fail it in CI, which installs it."""
    if os.access(HAPROXY, os.X_OK):
        return
    reason = "%s is missing: apt-get install haproxy" % HAPROXY
    if os.environ.get("CI"):
        pytest.fail("cannot run: " + reason, pytrace=False)
    pytest.skip(reason)


def broker_command(python, port):
    """``(argv, environment)``: the unit's ``ExecStart`` run by ``python``, and the variables its
    ``Environment=`` lines set, for the instance listening on ``port``."""
    argv, environment = None, {}
    for words in unit_lines():
        key, _, value = words.partition("=")
        value = value.replace("%i", str(port))
        if key == "ExecStart":
            argv = [python] + shlex.split(value)[1:]
        elif key == "Environment":
            environment.update(assignment.split("=", 1) for assignment in shlex.split(value))
    return argv, environment


def unit_lines():
    """The settings of ``deploy/sockjs-broker@.service``, comments and sections left out."""
    with open(os.path.join(DEPLOY, "sockjs-broker@.service")) as f:
        return [line.strip() for line in f if "=" in line and not line.startswith("#")]


# The shipped binds, by port: the public side, its TLS side, the backends' publishing side,
# haproxy's Prometheus exporter.
BINDS = {"80": "port", "443": "tls_port", "8000": "publish_port", "8404": "metrics_port"}
TLS_LINE = "#tls "


def haproxy_config(ports, broker_ports, tls_pem=None, source=os.path.join(DEPLOY, "haproxy.cfg")):
    """``deploy/haproxy.cfg`` (or the config at ``source``) listening on ``ports``
    (``{"port": N, ...}``, by the names of :data:`BINDS`), in front of ``broker_ports``:
    each backend's first ``server`` line repeated for every broker, the others dropped.
    With ``tls_pem``, the lines marked ``#tls`` are switched on, serving that file."""
    with open(source) as f:
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
            out.append("    maxconn %d" % (resource.getrlimit(resource.RLIMIT_NOFILE)[1] // 2 - 100))
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


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HAProxy:
    """``haproxy -db`` in the foreground, by a config generated from ``source``, on loopback."""

    def __init__(self, broker_ports, directory, tls_pem=None, source=os.path.join(DEPLOY, "haproxy.cfg")):
        self.broker_ports = list(broker_ports)
        ports = {name: free_port() for name in BINDS.values()}
        self.port, self.tls_port = ports["port"], ports["tls_port"]
        self.publish_port, self.metrics_port = ports["publish_port"], ports["metrics_port"]
        self.origin = "http://127.0.0.1:%d" % self.port
        self.tls_origin = "https://127.0.0.1:%d" % self.tls_port
        self.publish_origin = "http://127.0.0.1:%d" % self.publish_port
        self.config = os.path.join(directory, "haproxy.cfg")
        with open(self.config, "w") as f:
            f.write(haproxy_config(ports, self.broker_ports, tls_pem, source))
        self.log = open(os.path.join(directory, "haproxy.log"), "w+")
        self.process = subprocess.Popen([HAPROXY, "-db", "-f", self.config], stdout=self.log,
                                        stderr=subprocess.STDOUT)

    def output(self):
        self.log.seek(0)
        return self.log.read()

    def server_states(self):
        """``{(backend, server name): "UP" or another state}`` from haproxy's exporter."""
        import urllib.request
        url = "http://127.0.0.1:%d/metrics" % self.metrics_port
        with urllib.request.urlopen(url, timeout=5) as response:
            text = response.read().decode()
        states = {}
        for match in re.finditer(r'^haproxy_server_status\{proxy="([^"]+)",server="([^"]+)",'
                                 r'state="([A-Z]+)"\} 1$', text, re.MULTILINE):
            states[(match.group(1), match.group(2))] = match.group(3)
        return states

    def wait_ready(self, timeout=15.0):
        """Until every broker is UP in every backend; fails with haproxy's output."""
        deadline = time.monotonic() + timeout
        want = {(backend, "broker%d" % p) for backend in ("brokers", "sessions") for p in self.broker_ports}
        while True:
            assert self.process.poll() is None, "haproxy exited:\n" + self.output()
            try:
                states = self.server_states()
            except OSError:
                states = {}
            if all(states.get(key) == "UP" for key in want):
                return
            assert time.monotonic() < deadline, "brokers not UP in haproxy: %r\n%s" % (states, self.output())
            time.sleep(0.05)

    def stop(self):
        stop_process(self.process)
        self.log.close()
