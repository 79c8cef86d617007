"""The shipped deployment files (``deploy/``), run by tests as they are.

A test runs the brokers by the systemd unit's ``ExecStart`` and ``Environment``, with only
what must differ on a test machine changed: the interpreter and the port (ephemeral, on
loopback). haproxy runs by ``deploy/haproxy.cfg`` as the load client runs it
(:mod:`loadtest.contenders.haproxy`, whose names are also this module's).
"""

import os
import shlex

import pytest

from loadtest.contenders.haproxy import HAPROXY
from checkout import ROOT

DEPLOY = os.path.join(ROOT, "deploy")
HAPROXY_CONFIG = os.path.join(DEPLOY, "haproxy.cfg")


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
