"""The shipped deployment files (``deploy/``), run by tests as they are.

A test runs the brokers by the systemd unit's ``ExecStart`` and ``Environment``, with only
what must differ on a test machine changed: the interpreter and the port (ephemeral, on
loopback). haproxy runs by ``deploy/haproxy.cfg`` as the load client runs it
(:mod:`loadtest.contenders.haproxy`, whose names are also this module's). Debian's nginx runs
by ``deploy/nginx.conf`` (:class:`Nginx`) with the same rule: only its ports, its server lines,
its user and the paths of its pid, logs, temporary files and certificate changed, no root needed.
"""

import collections
import contextlib
import functools
import os
import pwd
import re
import shlex
import socket
import subprocess
import time
import urllib.request

import pytest

from loadtest.contenders.child_process import BIND_ATTEMPTS, ServerError, free_port, stop_process
from loadtest.contenders.haproxy import HAPROXY, TLS_LINE
from checkout import ROOT

DEPLOY = os.path.join(ROOT, "deploy")
HAPROXY_CONFIG = os.path.join(DEPLOY, "haproxy.cfg")
NGINX_CONFIG = os.path.join(DEPLOY, "nginx.conf")
NGINX = "/usr/sbin/nginx"
# The status of a line of nginx's access log: ... "GET / HTTP/1.1" 200 ...
_LOGGED_STATUS = re.compile(r'" (\d{3}) ')


def require_program(path, package):
    """Skip the calling test where the program at ``path`` is missing; fail it in CI, which
    installs Debian's ``package``."""
    if os.access(path, os.X_OK):
        return
    reason = "%s is missing: apt-get install %s" % (path, package)
    if os.environ.get("CI"):
        pytest.fail("cannot run: " + reason, pytrace=False)
    pytest.skip(reason)


def assert_started_on_fresh_ports(proxy, taken):
    """``proxy``, whose first port was ``taken`` before it could bind, is ready on other ports at
    its second attempt and answers ``/healthz`` there; stopped in any case."""
    try:
        proxy.wait_ready()
        assert proxy.attempts == 2
        assert proxy.port != taken
        with urllib.request.urlopen(proxy.origin + "/healthz", timeout=10) as response:
            assert response.status == 200
    finally:
        proxy.stop()


def require_haproxy():
    require_program(HAPROXY, "haproxy")


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


def require_nginx():
    require_program(NGINX, "nginx")


@pytest.fixture(name="start_cluster")
def start_cluster_behind_nginx(start_cluster):
    """``start_cluster`` with nginx in front, by ``deploy/nginx.conf``: a test module imports it
    to run its tests, or the haproxy tests it imports, through nginx."""
    return functools.partial(start_cluster, front="nginx")


def nginx_config(ports, broker_ports, directory, tls=None, source=NGINX_CONFIG):
    """The config at ``source`` (``deploy/nginx.conf``) on the loopback ``ports`` (by the shipped
    port: ``{"80": port, "443": TLS port, "8000": publishing port}``), a ``server`` line per
    broker port in each upstream, its pid, logs and temporary files in ``directory``, run as this
    user; its ``#tls`` lines on with ``tls`` (a :class:`tls_files.TLSFiles`), redirecting to the
    TLS port."""
    with open(source) as f:
        lines = f.read().splitlines()
    files = {"/run/nginx.pid": directory + "/nginx.pid", "/var/log/nginx/": directory + "/",
             "https://$host$request_uri": "https://$host:%s$request_uri" % ports["443"]}
    if tls is not None:
        files.update({"/etc/nginx/certs/broker.crt": tls.certfile, "/etc/nginx/certs/broker.key": tls.keyfile})
    out = []
    for line in lines:
        if tls is not None and line.lstrip().startswith(TLS_LINE):
            line = line.replace(TLS_LINE, "", 1)
        for shipped, here in files.items():
            line = line.replace(shipped, here)
        words = line.split()
        if words[:1] == ["user"]:
            line = "user %s;" % pwd.getpwuid(os.getuid()).pw_name
        elif words[:1] == ["listen"]:
            address, *options = " ".join(words[1:]).rstrip(";").split()
            line = "        listen %s;" % " ".join(["127.0.0.1:%d" % ports[address.rsplit(":", 1)[-1]]] + options)
        elif words[:1] == ["server"] and words[1].startswith("127.0.0.1:"):
            if out[-1].lstrip().startswith("server 127.0.0.1:"):
                continue
            shipped_port = words[1].rsplit(":", 1)[1]
            out.extend(line.replace(shipped_port, str(port), 1) for port in broker_ports)
            continue
        out.append(line)
        if words == ["http", "{"]:
            out.extend("    %s_temp_path %s/%s;" % (kind, directory, kind)
                       for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi"))
    return "\n".join(out) + "\n"


class Nginx:
    """``nginx -g 'daemon off;'`` by ``source`` (:func:`nginx_config`) in front of
    ``broker_ports``, its files in ``directory``: ``origin`` its public side, ``tls_origin`` its
    TLS side (with ``tls``), ``publish_origin`` its side for backends. One that lost a port to
    another process is started again on fresh ones (``BIND_ATTEMPTS`` in all): its ports are final
    once :meth:`wait_ready` returns."""

    def __init__(self, broker_ports, directory, tls=None, source=NGINX_CONFIG):
        require_nginx()
        self.broker_ports = list(broker_ports)
        self.directory, self._tls, self._source = directory, tls, source
        self.config = os.path.join(directory, "nginx.conf")
        self.access_log = os.path.join(directory, "access.log")
        self.attempts = 0
        self._start()

    def _start(self):
        self.attempts += 1
        ports = {shipped: free_port() for shipped in ("80", "443", "8000")}
        self.port, self.tls_port, self.publish_port = ports["80"], ports["443"], ports["8000"]
        self.origin = "http://127.0.0.1:%d" % self.port
        self.tls_origin = "https://127.0.0.1:%d" % self.tls_port
        self.publish_origin = "http://127.0.0.1:%d" % self.publish_port
        with open(self.config, "w") as f:
            f.write(nginx_config(ports, self.broker_ports, self.directory, self._tls, self._source))
        with open(os.path.join(self.directory, "nginx.out"), "w") as out:
            self.process = subprocess.Popen([NGINX, "-p", self.directory, "-c", self.config, "-g", "daemon off;"],
                                            stdout=out, stderr=subprocess.STDOUT)

    def output(self):
        """What nginx has complained of so far: its output and its error log."""
        text = ""
        for name in ("nginx.out", "error.log"):
            with contextlib.suppress(OSError), open(os.path.join(self.directory, name)) as f:
                text += f.read()
        return text

    def statuses(self):
        """``{status: answers}`` of every request logged so far."""
        with open(self.access_log) as f:
            return collections.Counter(int(m.group(1)) for m in map(_LOGGED_STATUS.search, f) if m)

    def wait_ready(self, timeout=15.0):
        """Until nginx takes connections on each of its ports and every broker answers ``/healthz``
        on its own (nginx checks none: it is ready when they are)."""
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                if "Address already in use" in self.output() and self.attempts < BIND_ATTEMPTS:
                    self._start()
                    continue
                raise ServerError("nginx exited:\n" + self.output())
            if self._answering():
                return
            if time.monotonic() > deadline:
                raise ServerError("nginx or a broker not answering:\n" + self.output())
            time.sleep(0.05)

    def _answering(self):
        """Whether nginx has bound its ports (it writes its pid file then: until then another
        process may hold one, nginx retrying it for 2.5 s) and they, and the brokers, answer."""
        listening = [self.port, self.publish_port] + ([self.tls_port] if self._tls else [])
        try:
            with open(os.path.join(self.directory, "nginx.pid")) as f:
                if f.read().strip() != str(self.process.pid):
                    return False
            for port in listening:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
            for port in self.broker_ports:
                urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=2).close()
        except OSError:
            return False
        return True

    def stop(self):
        stop_process(self.process)
