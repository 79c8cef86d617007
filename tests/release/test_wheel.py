"""The release as a user installs it: ``python -m build`` makes the sdist and, from it, the wheel;
the wheel goes into a fresh venv of this interpreter (its dependencies from PyPI, through pip's
cache), and its ``sockjs-broker`` command runs with no ``node`` on its PATH, outside the checkout.
It serves the demo page and the sockjs-client that package-lock.json pins, from its own copy, and
Chromium's pages reach it on every transport."""

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


def built(out):
    """(sdist, wheel) that ``python -m build`` made from the checkout into ``out``."""
    run([sys.executable, "-m", "build", "--outdir", str(out), ROOT], timeout=240)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def without_node():
    """This PATH without the directories that hold a ``node``."""
    directories = os.environ.get("PATH", "").split(os.pathsep)
    return os.pathsep.join(d for d in directories if d and shutil.which("node", path=d) is None)


@pytest.mark.timeout(600)
def test_the_installed_wheel_serves_the_pinned_sockjs_client_to_every_transport_without_node(tmp_path):
    reason = missing_requirement()
    if reason:
        cannot_run(reason)
    sdist, wheel = built(tmp_path / "dist")
    with tarfile.open(str(sdist)) as archive:
        members = [name.split("/", 1)[-1] for name in archive.getnames()]
    assert not [name for name in members if "node_modules" in name]
    assert {"package.json", "package-lock.json", "pyproject.toml", "setup.py", "LICENSE"} <= set(members)
    with zipfile.ZipFile(str(wheel)) as archive:
        names = set(archive.namelist())
        assert archive.read("broker/ops/sockjs_client/sockjs.min.js") == open(PINNED_CLIENT, "rb").read()
    assert set(WHEEL_DATA) <= names, set(WHEEL_DATA) - names
    assert [name for name in names if name.endswith(".dist-info/licenses/LICENSE")]

    venv = tmp_path / "venv"
    home = tmp_path / "elsewhere"
    home.mkdir()
    path = os.pathsep.join([str(venv / "bin"), without_node()])
    assert shutil.which("node", path=path) is None
    # Nothing of the checkout on the venv's path (its sockjs_broker.egg-info would pass for the install).
    env = dict(os.environ, PATH=path)
    env.pop("PYTHONPATH", None)
    run([sys.executable, "-m", "venv", str(venv)], env=env, timeout=120)
    run([str(venv / "bin" / "pip"), "install", "-q", "--disable-pip-version-check", str(wheel)], env=env,
        cwd=str(home), timeout=400)
    served_from = run([str(venv / "bin" / "python"), "-c",
                       "from broker.ops import demo_page; print(demo_page.find_sockjs_client())"],
                      env=env, cwd=str(home), timeout=60)
    assert served_from.strip().startswith(str(venv)), served_from
    assert run([str(venv / "bin" / "sockjs-broker"), "--help"], env=env, cwd=str(home),
               timeout=60).startswith("usage: sockjs-broker ")

    server = launch([str(venv / "bin" / "sockjs-broker"), "--host", "127.0.0.1", "--port", "0",
                     "--publish-token", TOKEN, "--heartbeat-delay", "1", "--drain-seconds", "0"],
                    env={"PATH": path, "PYTHONPATH": None}, cwd=str(home), timeout=60)
    try:
        broker = RunningBroker(server)
        status, page = broker.request("GET", "/")
        assert status == 200 and demo_page.SOCKJS_URL in page and "npm ci" not in page
        status, iframe = broker.request("GET", "/broadcast/iframe.html")
        assert status == 200 and '<script src="%s"></script>' % demo_page.SOCKJS_URL in iframe
        with open(PINNED_CLIENT, "rb") as f, urllib.request.urlopen(broker.origin + demo_page.SOCKJS_URL,
                                                                    timeout=5) as response:
            assert response.status == 200 and response.read() == f.read()

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
