"""Where the checkout under test is (the one place tests compute it), and the suites its .ci/ installs there."""

import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def python2_suite(path, installer):
    """``path``, the runner a Python 2.7 suite's ``installer`` (a ``.ci/`` script) makes: a
    missing one fails the test in CI, which installs it, and skips it elsewhere."""
    if not os.access(path, os.X_OK):
        reason = "not installed: bash .ci/%s" % installer
        if os.environ.get("CI"):
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return path
