"""The import contract (``.importlinter``): it holds here, and breaks as soon as an import runs the wrong way.

tox runs ``lint-imports`` on the tree before pytest; these tests run it on a
copy of the packages with one import added, to show the contract catches it.
"""

import os
import shutil
import subprocess
import sys

import pytest
from checkout import ROOT

PACKAGES = ("broker", "loadtest", "plots")
LINT_IMPORTS = os.path.join(os.path.dirname(sys.executable), "lint-imports")


def lint_imports(tmp_path, added=None):
    """Run ``lint-imports`` on a copy of the packages, ``added`` being ``(module path, import line)``."""
    for package in PACKAGES:
        shutil.copytree(os.path.join(ROOT, package), str(tmp_path / package),
                        ignore=shutil.ignore_patterns("__pycache__", "node_modules", "*.js*", "demo", "reference"))
    shutil.copy(os.path.join(ROOT, ".importlinter"), str(tmp_path))
    if added is not None:
        path, line = added
        with open(str(tmp_path / path), "a") as module:
            module.write("\n%s\n" % line)
    return subprocess.run([LINT_IMPORTS, "--no-cache"], cwd=str(tmp_path), capture_output=True, text=True,
                          timeout=120, env=dict(os.environ, PYTHONPATH=str(tmp_path)))


def test_the_packages_keep_the_contract(tmp_path):
    done = lint_imports(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.mark.parametrize("added, broken", [
    (("loadtest/scenarios/latency.py", "import broker.app"), "loadtest.scenarios.latency -> broker.app"),
    (("loadtest/results/files.py", "from broker.ops.api import interpreter"), "loadtest.results.files -> broker.ops.api"),
    (("loadtest/scenarios/compare.py", "from plots import figures"), "loadtest.scenarios.compare -> plots.figures"),
    (("broker/core/hub.py", "from loadtest.framing import payload"), "broker.core.hub -> loadtest.framing.payload"),
    (("loadtest/client/connections.py", "import tornado.iostream"), "loadtest.client.connections -> tornado"),
    (("broker/protocol/rfc6455.py", "import socket"), "broker.protocol.rfc6455 -> socket"),
    (("broker/core/hub.py", "from tornado.ioloop import IOLoop"), "broker.core.hub -> tornado"),
    (("broker/core/limits.py", "from broker.transports import listener"),
     "broker.core.limits -> broker.transports.listener"),
    (("broker/ops/api.py", "from broker.transports import router"), "broker.ops.api -> broker.transports.router"),
    (("loadtest/method/rules.py", "from loadtest.client import connections"),
     "loadtest.method.rules -> loadtest.client.connections"),
    (("loadtest/scenarios/soak.py", "from loadtest.scenarios import compare"),
     "loadtest.scenarios.soak -> loadtest.scenarios.compare"),
    (("loadtest/framing/websocket_protocol.py", "import asyncio"), "loadtest.framing.websocket_protocol -> asyncio"),
])
def test_an_import_the_wrong_way_breaks_it(tmp_path, added, broken):
    done = lint_imports(tmp_path, added)
    assert done.returncode != 0
    assert broken in done.stdout, done.stdout
