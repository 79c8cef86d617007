import re

from setuptools import find_packages, setup

with open("broker/__init__.py") as f:
    version = re.search(r'__version__ = "([^"]+)"', f.read()).group(1)

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
            # Runs the tests that mostly wait on brokers' timeouts three at a time (tox.ini).
            "pytest-xdist>=3.3",
            # The tests' own SockJS clients: an implementation independent of the load client's.
            "websocket-client>=1.6,<2",
            # lint-imports holds the import contracts of .importlinter.
            "import-linter>=2.2",
            # grimp, import-linter's import graph, is built in Rust: 3.5 is the last with a PyPy 3.9 wheel.
            "grimp<3.6; platform_python_implementation == 'PyPy'",
            # trustme makes the TLS tests' certificate authority and certificates, in memory.
            "trustme>=1.1",
        ],
        "plots": ["matplotlib>=3.7"],  # a figure legend outside its panels (loc="outside ...")
        # The documentation site (tox -e docs). Tested from Sphinx 7.0 with sphinx-argparse 0.4 and
        # furo 2023.9.10 up to Sphinx 9.0, sphinx-argparse 0.6 and furo 2025.12.19; pip picks the
        # newest that still runs on the interpreter (Sphinx 7.4 on Python 3.9).
        "docs": ["sphinx>=7,<10", "furo>=2023.9.10,<2026", "sphinx-argparse>=0.4,<0.7"],
    },
    entry_points={"console_scripts": ["sockjs-broker=broker.__main__:main"]},
    classifiers=[
        "Programming Language :: Python :: 3",
        "Programming Language :: Python :: Implementation :: CPython",
        "Programming Language :: Python :: Implementation :: PyPy",
        "Framework :: Tornado",
    ],
)
