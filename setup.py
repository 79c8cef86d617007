import json
import os
import re
import shutil
import subprocess

from setuptools import find_packages, setup
from setuptools.command.build_py import build_py

with open("broker/__init__.py") as f:
    version = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)

# sockjs-client as npm installs it (package-lock.json pins it), and where the wheel carries it: the
# broker (broker.ops.demo_page) serves that copy, so an installed broker needs no Node.js.
SOCKJS_CLIENT = os.path.join("node_modules", "sockjs-client")
SOCKJS_CLIENT_IN_PACKAGE = os.path.join("broker", "ops", "sockjs_client")


def pinned_sockjs_client():
    """The sockjs-client version package-lock.json pins."""
    with open("package-lock.json") as f:
        return json.load(f)["packages"]["node_modules/sockjs-client"]["version"]


def installed_sockjs_client():
    """The sockjs-client version in node_modules, or None."""
    try:
        with open(os.path.join(SOCKJS_CLIENT, "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return None


class BuildPyWithSockjsClient(build_py):
    """build_py, then sockjs-client's ``dist`` files and its LICENSE from node_modules into the
    package. Building from an sdist (which carries package.json and package-lock.json, never
    node_modules) runs ``npm ci --omit=dev`` first; a checkout needs ``npm ci`` run in it. An
    editable install copies nothing: the broker finds the checkout's node_modules."""

    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            return
        pinned = pinned_sockjs_client()
        if installed_sockjs_client() is None and os.path.exists("PKG-INFO") and shutil.which("npm"):
            subprocess.run(["npm", "ci", "--omit=dev", "--no-audit", "--no-fund", "--loglevel=error"], check=True)
        installed = installed_sockjs_client()
        if installed != pinned:
            raise SystemExit("the wheel carries sockjs-client %s (package-lock.json), but %s holds %s: run "
                             "`npm ci` (Node.js 20+) in the checkout before building a wheel from it; from "
                             "the sdist, the build runs it where npm is on PATH"
                             % (pinned, SOCKJS_CLIENT, installed or "none"))
        target = os.path.join(self.build_lib, SOCKJS_CLIENT_IN_PACKAGE)
        os.makedirs(target, exist_ok=True)
        dist = os.path.join(SOCKJS_CLIENT, "dist")
        for source in [os.path.join(dist, name) for name in sorted(os.listdir(dist))] + [
                os.path.join(SOCKJS_CLIENT, "LICENSE")]:
            self.copy_file(source, os.path.join(target, os.path.basename(source)))


with open("README.rst") as f:
    long_description = f.read()

setup(
    name="sockjs-broker",
    version=version,
    description="A SockJS broadcast broker on Tornado, and the load tests that measure it",
    long_description=long_description,
    long_description_content_type="text/x-rst",
    license="MIT",
    python_requires=">=3.9",
    packages=find_packages(include=["broker", "broker.*", "loadtest", "loadtest.*", "plots", "plots.*"]),
    package_data={"broker": ["ops/demo/*"], "loadtest": ["node/*.js", "node/*.json", "go/*.go", "go/go.mod", "go/go.sum"]},
    install_requires=[
        "tornado>=6.4,<7",
        # The broker subclasses sockjs-tornado's transports and relies on their internals.
        "sockjs-tornado==1.0.7",
        # Round-trip percentiles in the load client (0.10.3 is the last for Python 3.9).
        "hdrhistogram>=0.10.3,<0.11",
        # GET /metrics: the Prometheus text format and its custom-collector API. Pure Python, so the
        # same on PyPy; 0.17 is the oldest tested here, and pip picks the newest that still takes
        # Python 3.9 (0.26 asks for >=3.9).
        "prometheus-client>=0.17,<1",
        # The cluster backplane (--redis, imported only then): redis-py's asyncio client runs on
        # Tornado's asyncio loop, is pure Python (so PyPy runs it), and has pipelines and blocking
        # XREAD. 6.x is the line that still supports Python 3.9; tested with 6.4.
        "redis>=6.2,<7",
        # Tokens (JWT) for private rooms and scoped publishing: PyJWT checks signatures and claims
        # (exp, nbf, alg allow-lists), which must never be written by hand; its crypto extra
        # (cryptography) checks RS256 and ES256. Pure Python itself; 2.8 is the oldest tested.
        "PyJWT[crypto]>=2.8,<3",
        # cryptography 43 is the last with a PyPy 3.9 wheel.
        "cryptography<44; platform_python_implementation == 'PyPy'",
    ],
    extras_require={
        "test": [
            "pytest>=7",
            "pytest-timeout>=2.1",
            # Runs the tests that mostly wait on brokers' timeouts four at a time (tox.ini).
            "pytest-xdist>=3.3",
            # The tests' own SockJS clients: an implementation independent of the load client's.
            "websocket-client>=1.6,<2",
            # lint-imports holds the import contracts of .importlinter.
            "import-linter>=2.2",
            # grimp, import-linter's import graph, is built in Rust: 3.5 is the last with a PyPy 3.9 wheel.
            "grimp<3.6; platform_python_implementation == 'PyPy'",
            # tests/release builds the wheel and the sdist (python -m build) and installs the wheel.
            "build>=1",
            # trustme makes the TLS tests' certificate authority and certificates, in memory.
            "trustme>=1.1",
        ],
        "plots": ["matplotlib>=3.7"],  # a figure legend outside its panels (loc="outside ...")
        # The documentation site (tox -e docs). Tested from Sphinx 7.0 with sphinx-argparse 0.4 and
        # furo 2023.9.10 up to Sphinx 9.0, sphinx-argparse 0.6 and furo 2025.12.19; pip picks the
        # newest that still runs on the interpreter (Sphinx 7.4 on Python 3.9).
        "docs": ["sphinx>=7,<10", "furo>=2023.9.10,<2026", "sphinx-argparse>=0.4,<0.7"],
    },
    cmdclass={"build_py": BuildPyWithSockjsClient},
    entry_points={"console_scripts": ["sockjs-broker=broker.__main__:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: Implementation :: CPython",
        "Programming Language :: Python :: Implementation :: PyPy",
        "Framework :: Tornado",
    ],
)
