"""The servers ``compare`` measures: how to launch each one and what it runs on.

``resolve(name)`` returns a :class:`Contender` to launch, or raises :class:`Unavailable` saying
what is missing and how to get it. ``cluster-*`` are the brokers joined through Redis. Over TLS
a broker is labelled ``<name>+tls``, to be measured beside itself plain; the other servers
serve no TLS and are :class:`Unavailable` so.
"""

import fcntl
import os
import platform
import shutil
import subprocess
import sys

import loadtest
from loadtest.errors import LoadTestError
from loadtest.records import TLS_SUFFIX

PACKAGE_DIR = os.path.dirname(os.path.abspath(loadtest.__file__))
# The checkout holding the package: where tox and the documented commands put the interpreters.
REPO_ROOT = os.path.dirname(PACKAGE_DIR)
# Where a server's interpreter starts: the checkout, whose broker it then imports whatever it has
# installed; from an installed package (tox), nowhere chosen: started in site-packages, another
# interpreter would import that one's packages, and PyPy's compiled ones (cryptography's) are not
# CPython's.
SERVER_CWD = None if os.path.basename(REPO_ROOT) in ("site-packages", "dist-packages") else REPO_ROOT
NODE_DIR = os.path.join(PACKAGE_DIR, "node")
GO_DIR = os.path.join(PACKAGE_DIR, "go")
GO_BINARY = os.path.join(GO_DIR, "bin", "sockjs-go")
CPYTHON_CANDIDATES = tuple(os.path.join(REPO_ROOT, env, "bin", "python") for env in (".tox/py3", ".venv"))
PYPY_CANDIDATES = tuple(os.path.join(REPO_ROOT, env, "bin", "python") for env in (".tox/pypy3", ".venv-pypy"))
PYPY_HOWTO = (
    "no PyPy environment with the project installed (looked for %s); to get one: "
    "apt-get install pypy3 pypy3-venv && pypy3 -m venv .venv-pypy && .venv-pypy/bin/pip install -e ."
    % " and ".join(os.path.relpath(path, REPO_ROOT) for path in PYPY_CANDIDATES))
NAMES = ("broker-cpython", "broker-pypy", "sockjs-node", "sockjs-tornado", "sockjs-go", "cluster-cpython",
         "cluster-pypy")
# What compare and soak run unless told otherwise: one process each.
SINGLE = NAMES[:5]
# The brokers, alone and joined through Redis; they alone serve https and wss (``--certfile``, ``--keyfile``).
BROKERS = ("broker-cpython", "broker-pypy", "cluster-cpython", "cluster-pypy")
CLUSTERS = BROKERS[2:]
TLS_CAPABLE = BROKERS
LISTEN = ["--host", "127.0.0.1", "--port", "0"]
# The load client's clients publish far faster than any person: the brokers run
# without their per-client publish rate limit.
BROKER_FLAGS = ["--client-rate", "0"]

# Runs under a candidate interpreter, from the repository root: fails unless the
# module it will serve imports, then prints the interpreter's name and version.
_PROBE = ("import importlib, sys; importlib.import_module(sys.argv[1]); "
          "from broker.runtime import interpreter; print(interpreter())")


class Unavailable(LoadTestError):
    """A contender cannot run on this machine; the message says why and how to fix it."""


class Contender:
    """A server to measure: ``label``, the ``argv`` that starts it, its ``runtime``, its ``cwd``; ``joined``:
    its processes join through Redis; ``backplane``: what starts the Redis they join (None: one redis-server)."""

    backplane = None

    def __init__(self, label, argv, runtime, cwd=SERVER_CWD, joined=False):
        self.label = label
        self.argv = argv
        self.runtime = runtime
        self.cwd = cwd
        self.joined = joined

    def __repr__(self):
        return "Contender(%r, %r, %r%s)" % (self.label, self.argv, self.runtime, ", joined=True" if self.joined else "")


def resolve(name, install_timeout=300.0, broker_flags=BROKER_FLAGS, certificate=None):
    """The :class:`Contender` called ``name``; with a ``certificate`` it serves TLS, labelled ``name+tls``."""
    if certificate is None:
        return _resolve(name, install_timeout, broker_flags)
    if name not in TLS_CAPABLE:
        raise Unavailable("%s%s: %s serves no TLS (those that do: %s)" % (
            name, TLS_SUFFIX, name, ", ".join(TLS_CAPABLE)))
    plain = _resolve(name, install_timeout, list(broker_flags) + certificate.broker_flags())
    return Contender(name + TLS_SUFFIX, plain.argv, plain.runtime, plain.cwd, plain.joined)


def _resolve(name, install_timeout, broker_flags):
    if name in ("broker-cpython", "cluster-cpython"):
        return _cpython_contender(name, "broker", broker_flags, joined=name.startswith("cluster-"))
    if name in ("broker-pypy", "cluster-pypy"):
        python = pypy()
        try:
            if python is None:
                raise Unavailable(PYPY_HOWTO)
            runtime = probe(python, "broker")
        except Unavailable as reason:
            raise Unavailable("%s: %s" % (name, reason))
        return Contender(name, [python, "-m", "broker"] + LISTEN + list(broker_flags), runtime,
                         joined=name.startswith("cluster-"))
    if name == "sockjs-node":
        return _node_contender(name, install_timeout)
    if name == "sockjs-tornado":
        return _cpython_contender(name, "loadtest.contenders.stock_sockjs_tornado")
    if name == "sockjs-go":
        return _go_contender(name, install_timeout)
    raise Unavailable("unknown server %r (known: %s)" % (name, ", ".join(NAMES)))


def cpython(module):
    """``(path, runtime)`` of the first of :func:`cpython_candidates` that is CPython and imports
    ``module``: each is probed, since under ``tox -e pypy3`` this one and PATH's ``python3`` are PyPy."""
    tried = []
    for python in cpython_candidates():
        try:
            runtime = probe(python, module)
        except Unavailable as reason:
            tried.append(str(reason))
            continue
        if runtime.startswith("CPython "):
            return python, runtime
        tried.append("%s is %s" % (python, runtime))
    raise Unavailable("no CPython can import %s (%s); tox -e py3 --notest sets one up in .tox/py3"
                      % (module, "; ".join(tried) or "none found"))


def cpython_candidates():
    """Interpreters that may be CPython with the project's dependencies, best first, each once."""
    candidates = []
    if platform.python_implementation() == "CPython":
        candidates.append(sys.executable)
    if os.path.basename(os.path.dirname(sys.prefix)) == ".tox":
        candidates.append(os.path.join(os.path.dirname(sys.prefix), "py3", "bin", "python"))
    candidates.extend(CPYTHON_CANDIDATES)
    for directory in os.environ.get("PATH", "").split(os.pathsep):
        if directory:
            candidates.append(os.path.join(directory, "python3"))
    found = []
    for path in map(os.path.abspath, candidates):
        if os.access(path, os.X_OK) and path not in found:
            found.append(path)
    return found


def pypy():
    """The first PyPy environment set up for the project, or None."""
    for path in PYPY_CANDIDATES:
        if os.access(path, os.X_OK):
            return path
    return None


def probe(python, module):
    """The runtime (``CPython 3.11.7``) of ``python`` once it has imported ``module``."""
    try:
        done = subprocess.run([python, "-c", _PROBE, module], cwd=SERVER_CWD, capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise Unavailable("cannot run %s: %s" % (python, error))
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["exit code %d" % done.returncode])[-1]
        raise Unavailable("%s cannot import %s: %s" % (python, module, last))
    return done.stdout.strip()


def _cpython_contender(name, module, flags=(), joined=False):
    try:
        python, runtime = cpython(module)
    except Unavailable as reason:
        raise Unavailable("%s: %s" % (name, reason))
    return Contender(name, [python, "-m", module] + LISTEN + list(flags), runtime, joined=joined)


def _node_contender(name, install_timeout):
    node = shutil.which("node")
    if node is None:
        raise Unavailable("%s: node is not installed (Node 20 or later is needed)" % name)
    ensure_node_modules(install_timeout)
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
    _prepare("sockjs-node", "npm ci", [npm, "ci", "--no-audit", "--no-fund"], NODE_DIR, timeout)


def _go_contender(name, install_timeout):
    go = shutil.which("go")
    if go is None:
        raise Unavailable("%s: go is not installed (Go 1.19 or later: apt-get install golang-go)" % name)
    build_go_server(go, install_timeout)
    version = subprocess.run([go, "env", "GOVERSION"], capture_output=True, text=True, timeout=30)
    runtime = "Go " + version.stdout.strip().replace("go", "", 1)
    return Contender(name, [GO_BINARY] + LISTEN, runtime, cwd=GO_DIR)


def build_go_server(go, timeout=300.0):
    """``go build`` ``loadtest/go`` into :data:`GO_BINARY` (up to date after the first); two builds wait in turn."""
    binary_dir = os.path.dirname(GO_BINARY)
    os.makedirs(binary_dir, exist_ok=True)
    with open(os.path.join(binary_dir, ".build-lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _prepare("sockjs-go", "go build", [go, "build", "-buildvcs=false", "-o", GO_BINARY, "."], GO_DIR, timeout)


def _prepare(server, step, argv, cwd, timeout):
    """Run ``argv`` in ``cwd``, the ``step`` ``server`` needs first: Unavailable if it fails or outlasts ``timeout``."""
    try:
        done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise Unavailable("%s: %s did not finish within %.0f s" % (server, step, timeout))
    if done.returncode != 0:
        raise Unavailable("%s: %s failed:\n%s" % (server, step, (done.stderr or done.stdout).strip()))
