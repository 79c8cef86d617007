"""The README's quick start, run as written in a copy of this checkout: it installs the broker
into a new virtualenv, the pinned sockjs-client with npm, and runs the broker, which serves the
demo page, the sockjs-client it names and the SockJS service.

The one change: ``BROKER_PORT=0`` in its environment (the command gives no flag that would
override it), so the broker takes a free port rather than 8080. The command runs with the
machine's ``python3``, not the interpreter running the tests: it is run under CPython's suite
alone."""

import os
import platform
import shutil
import signal
import subprocess
import time
import urllib.request

import pytest

import doc_blocks
from checkout import ROOT

INSTALL_SECONDS = 300


def tracked_copy(destination):
    """The files git tracks in this checkout, copied to ``destination``."""
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in filter(None, files.decode().split("\0")):
        source = os.path.join(ROOT, name)
        if os.path.isfile(source) and not os.path.islink(source):
            os.makedirs(os.path.join(destination, os.path.dirname(name)), exist_ok=True)
            shutil.copy2(source, os.path.join(destination, name))


def fetch(url):
    with urllib.request.urlopen(url, timeout=10) as response:
        return response.status, response.read().decode()


@pytest.mark.skipif(platform.python_implementation() != "CPython",
                    reason="the quick start runs the machine's python3 whichever suite runs it")
def test_the_readme_quick_start_installs_and_runs_the_broker(tmp_path):
    (command,) = doc_blocks.command_lines(doc_blocks.block_holding(doc_blocks.README, "pip install -q -e ."))
    checkout = str(tmp_path / "checkout")
    tracked_copy(checkout)
    process = subprocess.Popen(["bash", "-c", command], cwd=checkout, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=dict(os.environ, BROKER_PORT="0"),
                               start_new_session=True)
    try:
        deadline = time.monotonic() + INSTALL_SECONDS
        printed = []
        while not printed or "listening on" not in printed[-1]:
            line = process.stdout.readline()
            assert line and time.monotonic() < deadline, "".join(printed)[-4000:]
            printed.append(line)
        url = printed[-1].split("listening on ", 1)[1].strip()
        origin = url.rsplit("/", 1)[0]
        assert fetch(url + "/info")[0] == 200
        status, page = fetch(origin + "/")
        assert status == 200 and "/static/broker-client.js" in page
        script = page.split('<script src="', 1)[1].split('"', 1)[0]
        status, client = fetch(origin + script if script.startswith("/") else script)
        assert status == 200 and "SockJS" in client, script
    finally:
        # bash and the broker it started: SIGTERM drains and stops the broker, then bash ends.
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
