"""Browser tests: Debian's chromium, driven headless by playwright-core under node.

Each test starts a real broker and runs one of the node scripts beside this file
against it; a script prints its findings as one JSON line, or fails with the
page's console. Locally the tests skip when chromium, node or the node modules
are missing; in CI (``CI`` set) they fail instead, since CI installs them.
"""

import json
import os
import subprocess

import pytest

from broker.ops import demo_page
from checkout import ROOT
from chromium_scripts import cannot_run, missing_requirement

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT_TIMEOUT = 60


@pytest.fixture
def sockjs_client():
    """The directory of the sockjs-client files the broker serves."""
    directory = demo_page.find_sockjs_client()
    if directory is None:
        cannot_run("sockjs-client is missing: run `npm ci` in %s" % ROOT)
    return directory


@pytest.fixture
def browser_script():
    """``run(script, *args, env=None)``: run ``node tests/browser/<script>`` (with ``env`` added to
    the environment) and return its JSON result."""
    reason = missing_requirement()
    if reason:
        cannot_run(reason)

    def run(script, *args, env=None):
        try:
            completed = subprocess.run(["node", os.path.join(HERE, script), *args], cwd=ROOT,
                                       env=dict(os.environ, **(env or {})),
                                       capture_output=True, text=True, timeout=SCRIPT_TIMEOUT)
        except subprocess.TimeoutExpired:
            pytest.fail("%s %s: no result within %d s" % (script, " ".join(args), SCRIPT_TIMEOUT),
                        pytrace=False)
        if completed.returncode != 0:
            pytest.fail("%s %s failed:\n%s" % (script, " ".join(args), completed.stderr[-6000:]),
                        pytrace=False)
        # Split on newlines only: a result may hold U+2028, which splitlines() splits on.
        return json.loads(completed.stdout.rstrip("\n").split("\n")[-1])

    return run
