"""The release as a user installs it: ``python -m build`` makes the sdist and, from it, the wheel;
the wheel goes into a fresh venv of this interpreter (its dependencies from PyPI, through pip's
cache), and its ``sockjs-broker`` command runs with no ``node`` on its PATH, outside the checkout.
It serves the demo page and the sockjs-client that package-lock.json pins, from its own copy, and
Chromium's pages reach it on every transport. A wheel is never built with another
sockjs-client than the pinned one."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
import zipfile

import pytest

from broker.ops import demo_page
from checkout import ROOT
from chromium_scripts import TRANSPORTS, ReportingScript, cannot_run, missing_requirement
from loadtest.contenders.child_process import launch
from running_broker import RunningBroker

TOKEN = "t"
MARKER = "from a backend"
PINNED_CLIENT = os.path.join(ROOT, "node_modules", "sockjs-client", "dist", "sockjs.min.js")
# What the wheel must carry besides Python modules: the demo page's files, the load client's
# contenders, sockjs-client's files and license, the project's license.
WHEEL_DATA = ("broker/ops/demo/index.html", "broker/ops/demo/demo.js", "broker/ops/demo/demo.css",
              "broker/ops/demo/broker-client.js", "broker/ops/sockjs_client/sockjs.min.js",
              "broker/ops/sockjs_client/sockjs.js", "broker/ops/sockjs_client/LICENSE",
              "loadtest/node/server.js", "loadtest/node/package.json", "loadtest/node/package-lock.json",
              "loadtest/go/main.go", "loadtest/go/go.mod", "loadtest/go/go.sum")


def run(argv, **options):
    completed = subprocess.run(argv, capture_output=True, text=True, **options)
    assert completed.returncode == 0, (argv, completed.stdout[-3000:], completed.stderr[-3000:])
    return completed.stdout


def pinned_client():
    with open(PINNED_CLIENT, "rb") as f:
        return f.read()


def built(out):
    """The wheel ``python -m build`` made into ``out`` from the sdist it made of the checkout (as pip
    builds one from an sdist), both checked."""
    run([sys.executable, "-m", "build", "--outdir", str(out), ROOT], timeout=240)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    with tarfile.open(str(sdist)) as archive:
        members = [name.split("/", 1)[-1] for name in archive.getnames()]
    assert not [name for name in members if "node_modules" in name]
    assert {"package.json", "package-lock.json", "pyproject.toml", "setup.py", "LICENSE"} <= set(members)
    with zipfile.ZipFile(str(wheel)) as archive:
        names = set(archive.namelist())
        assert archive.read("broker/ops/sockjs_client/sockjs.min.js") == pinned_client()
    assert set(WHEEL_DATA) <= names, set(WHEEL_DATA) - names
    assert [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]
    return wheel


def checkout_copy(destination):
    """What ``python -m build`` reads from the checkout, copied to ``destination``."""
    ignored = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for name in ("broker", "loadtest", "plots"):
        shutil.copytree(os.path.join(ROOT, name), str(destination / name), ignore=ignored)
    for name in ("setup.py", "pyproject.toml", "MANIFEST.in", "package.json", "package-lock.json",
                 "README.rst", "LICENSE"):
        shutil.copy(os.path.join(ROOT, name), str(destination / name))


def without_node(venv):
    """A PATH of ``venv``'s scripts and this one's directories but those that hold a ``node``."""
    directories = [d for d in os.environ.get("PATH", "").split(os.pathsep) if d]
    return os.pathsep.join([str(venv / "bin")] + [d for d in directories if shutil.which("node", path=d) is None])


@pytest.mark.timeout(600)
def test_the_installed_wheel_serves_the_pinned_sockjs_client_to_every_transport_without_node(tmp_path):
    reason = missing_requirement()
    if reason:
        cannot_run(reason)
    wheel = built(tmp_path / "dist")
    venv = tmp_path / "venv"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    path = without_node(venv)
    assert shutil.which("node", path=path) is None
    # Nothing of the checkout on the venv's path (its sockjs_broker.egg-info would pass for the install).
    env = {"PATH": path, "PYTHONPATH": None}
    venv_env = {name: value for name, value in dict(os.environ, **env).items() if value is not None}
    run([sys.executable, "-m", "venv", str(venv)], env=venv_env, timeout=120)
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], env=venv_env,
        cwd=str(elsewhere), timeout=400)
    served_from = run([str(venv / "bin" / "python"), "-c",
                       "from broker.ops import demo_page; print(demo_page.find_sockjs_client())"],
                      env=venv_env, cwd=str(elsewhere), timeout=60)
    assert served_from.strip().startswith(str(venv)), served_from
    assert run([str(venv / "bin" / "sockjs-broker"), "--help"], env=venv_env, cwd=str(elsewhere),
               timeout=60).startswith("usage: sockjs-broker ")

    server = launch([str(venv / "bin" / "sockjs-broker"), "--host", "127.0.0.1", "--port", "0",
                     "--publish-token", TOKEN, "--heartbeat-delay", "1", "--drain-seconds", "0"],
                    env=env, cwd=str(elsewhere), timeout=60)
    try:
        broker = RunningBroker(server)
        status, page = broker.request("GET", "/")
        assert status == 200 and demo_page.SOCKJS_URL in page and "npm ci" not in page
        status, iframe = broker.request("GET", "/broadcast/iframe.html")
        assert status == 200 and '<script src="%s"></script>' % demo_page.SOCKJS_URL in iframe
        with urllib.request.urlopen(broker.origin + demo_page.SOCKJS_URL, timeout=5) as response:
            assert response.status == 200 and response.read() == pinned_client()

        with ReportingScript("transport.js", broker.origin, "iframe-htmlfile") as demo:
            assert demo.next_report()["used"] == ["iframe-htmlfile", "iframe-htmlfile"]
        with ReportingScript("resume.js", broker.origin, ",".join(TRANSPORTS), MARKER) as pages:
            assert pages.next_report() == {"ready": True}
            status, answer = broker.request("POST", "/publish", MARKER.encode(), {"Authorization": "Bearer " + TOKEN})
            assert status == 200, answer
            received = pages.next_report()["pages"]
        assert {transport: page["log"] for transport, page in received.items()} == {
            transport: [MARKER] for transport in TRANSPORTS}
    finally:
        server.stop()
    assert "sockjs-client is not installed" not in server.output
    assert "Traceback" not in server.output, server.output[-4000:]


@pytest.mark.timeout(300)
def test_no_wheel_is_built_with_a_sockjs_client_other_than_the_pinned_one(tmp_path):
    source = tmp_path / "checkout"
    checkout_copy(source)
    with open(os.path.join(ROOT, "package-lock.json")) as f:
        pinned = json.load(f)["packages"]["node_modules/sockjs-client"]["version"]
    other = source / "node_modules" / "sockjs-client"
    (other / "dist").mkdir(parents=True)
    (other / "dist" / "sockjs.min.js").write_text("/* another sockjs-client */")
    (other / "LICENSE").write_text("MIT")
    (other / "package.json").write_text(json.dumps({"name": "sockjs-client", "version": "1.5.2"}))
    completed = subprocess.run([sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"),
                                str(source)], capture_output=True, text=True, timeout=240)
    assert completed.returncode != 0
    assert ("the wheel carries sockjs-client %s (package-lock.json), but node_modules/sockjs-client holds 1.5.2"
            % pinned) in completed.stdout + completed.stderr, completed.stderr[-3000:]
    assert not list(tmp_path.glob("dist/*.whl"))
