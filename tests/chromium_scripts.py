"""The node scripts of tests/browser/ (Debian's chromium, driven headless by playwright-core), as
any test runs them: what a machine lacks to run them, and a script that reports as it goes.

Rules: a missing requirement skips the test locally and fails it in CI (``CI`` set), which
installs everything; a script's report is one JSON line on its stdout; its stderr is read as
it comes, so that a page's chatter never fills the pipe and blocks the script.
"""

import json
import os
import shutil
import subprocess
import threading

import pytest

from checkout import ROOT

SCRIPTS = os.path.join(ROOT, "tests", "browser")
CHROMIUM = "/usr/bin/chromium"
# Every transport sockjs-client 1.6 can choose in Chromium.
TRANSPORTS = [
    "websocket",
    "xhr-streaming",
    "eventsource",
    "iframe-eventsource",
    "iframe-htmlfile",
    "xhr-polling",
    "iframe-xhr-polling",
    "jsonp-polling",
]


def missing_requirement():
    """What this machine lacks to run the browser tests, with the fix, or None."""
    if not os.path.exists(CHROMIUM):
        return "%s is missing: apt-get install chromium" % CHROMIUM
    if shutil.which("node") is None:
        return "node is missing: install Node.js 20 or later with npm"
    for package in ("playwright-core", "sockjs-client"):
        if not os.path.isdir(os.path.join(ROOT, "node_modules", package)):
            return "node_modules/%s is missing: run `npm ci` in %s" % (package, ROOT)
    return None


def cannot_run(reason):
    """Skip the current test for ``reason``; in CI, which installs everything, fail it."""
    if os.environ.get("CI"):
        pytest.fail("cannot run: " + reason, pytrace=False)
    pytest.skip(reason)


class ReportingScript:
    """``node tests/browser/<script> *args``, started (or the test skipped, as :func:`cannot_run`
    says) with the variables of ``env`` added to the environment, whose reports
    :meth:`next_report` reads one at a time; a context manager that kills the script if it is
    still running at the end."""

    def __init__(self, script, *args, env=None):
        reason = missing_requirement()
        if reason:
            cannot_run(reason)
        self.script = script
        self.process = subprocess.Popen(["node", os.path.join(SCRIPTS, script), *args], cwd=ROOT,
                                        env=dict(os.environ, **(env or {})),
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.errors = []
        self.reader = threading.Thread(target=lambda: self.errors.append(self.process.stderr.read()), daemon=True)
        self.reader.start()
        self.lines = iter(self.process.stdout)

    def next_report(self):
        """The script's next JSON line; fails the test, with its stderr, if it ended instead."""
        line = next(self.lines, None)
        if line is None:
            self.process.wait(10)
            self.reader.join(5)
            pytest.fail("%s ended: %s" % (self.script, "".join(self.errors)[-8000:]), pytrace=False)
        return json.loads(line)

    def wait(self, timeout):
        """Wait up to ``timeout`` seconds for the script to end by itself, its reports done."""
        self.process.wait(timeout)

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
