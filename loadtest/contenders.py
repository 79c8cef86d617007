"""The servers ``compare`` measures: how to launch each one and what it runs on.

``resolve(name)`` returns a :class:`Contender` ready to hand to
:func:`loadtest.servers.launch`, or raises :class:`Unavailable` with a message
saying what is missing and how to get it.
"""

import os
import platform
import shutil
import subprocess
import sys

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NODE_DIR = os.path.join(REPO_ROOT, "loadtest", "node")
PYPY_CANDIDATES = (
    os.path.join(REPO_ROOT, ".tox", "pypy3", "bin", "python"),
    os.path.join(REPO_ROOT, ".venv-pypy", "bin", "python"),
)
PYPY_HOWTO = (
    "no PyPy environment with the project installed (looked for %s); to get one: "
    "apt-get install pypy3 pypy3-venv && pypy3 -m venv .venv-pypy && .venv-pypy/bin/pip install -e ."
    % " and ".join(os.path.relpath(path, REPO_ROOT) for path in PYPY_CANDIDATES)
)
NAMES = ("broker-cpython", "broker-pypy", "sockjs-node", "sockjs-tornado")
LISTEN = ["--host", "127.0.0.1", "--port", "0"]

# Runs under the contender's interpreter, from the repository root: fails unless
# the module it will serve imports, then prints the interpreter's name and version.
_PROBE = (
    "import importlib, sys; importlib.import_module(sys.argv[1]); "
    "from loadtest.procstat import interpreter; print(interpreter())"
)


class Unavailable(Exception):
    """A contender cannot run on this machine; the message says why and how to fix it."""


class Contender:
    """A server to measure: ``label``, the ``argv`` that starts it, its ``runtime``, its ``cwd``."""

    def __init__(self, label, argv, runtime, cwd=REPO_ROOT):
        self.label = label
        self.argv = argv
        self.runtime = runtime
        self.cwd = cwd

    def __repr__(self):
        return "Contender(%r, %r, %r)" % (self.label, self.argv, self.runtime)


def resolve(name, npm_timeout=300.0):
    """The :class:`Contender` called ``name`` (one of :data:`NAMES`)."""
    if name == "broker-cpython":
        return _python_contender(name, cpython(), "broker")
    if name == "broker-pypy":
        python = pypy()
        if python is None:
            raise Unavailable("%s: %s" % (name, PYPY_HOWTO))
        return _python_contender(name, python, "broker")
    if name == "sockjs-node":
        return _node_contender(name, npm_timeout)
    if name == "sockjs-tornado":
        return _python_contender(name, cpython(), "loadtest.baseline")
    raise Unavailable("unknown server %r (known: %s)" % (name, ", ".join(NAMES)))


def cpython():
    """The current interpreter if it is CPython, else ``python3`` from PATH."""
    if platform.python_implementation() == "CPython":
        return sys.executable
    return shutil.which("python3") or "python3"


def pypy():
    """The first PyPy environment set up for the project, or None."""
    for path in PYPY_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return None


def _python_contender(name, python, module):
    try:
        probe = subprocess.run(
            [python, "-c", _PROBE, module],
            cwd=REPO_ROOT, capture_output=True, text=True, timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unavailable("%s: cannot run %s: %s" % (name, python, error))
    if probe.returncode != 0:
        last = (probe.stderr.strip().splitlines() or ["exit code %d" % probe.returncode])[-1]
        raise Unavailable("%s: %s cannot import %s: %s" % (name, python, module, last))
    return Contender(name, [python, "-m", module] + LISTEN, probe.stdout.strip())


def _node_contender(name, npm_timeout):
    node = shutil.which("node")
    if node is None:
        raise Unavailable("%s: node is not installed (Node 20 or later is needed)" % name)
    ensure_node_modules(npm_timeout)
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    runtime = "Node " + version.stdout.strip().lstrip("v")
    return Contender(name, [node, os.path.join(NODE_DIR, "server.js")] + LISTEN, runtime, cwd=NODE_DIR)


def ensure_node_modules(timeout=300.0):
    """Run ``npm ci`` in ``loadtest/node`` unless its dependencies are installed already."""
    if os.path.isdir(os.path.join(NODE_DIR, "node_modules", "sockjs")):
        return
    npm = shutil.which("npm")
    if npm is None:
        raise Unavailable("sockjs-node: npm is not installed; it installs loadtest/node's dependencies")
    print("installing sockjs-node dependencies: npm ci in %s" % NODE_DIR, file=sys.stderr, flush=True)
    try:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund"],
            cwd=NODE_DIR, capture_output=True, text=True, timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        raise Unavailable("sockjs-node: npm ci did not finish within %.0f s" % timeout)
    if done.returncode != 0:
        raise Unavailable("sockjs-node: npm ci failed:\n%s" % (done.stderr or done.stdout).strip())
