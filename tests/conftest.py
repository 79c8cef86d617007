import json
import os
import sys
import urllib.request

import pytest

from loadtest.servers import launch

pytest.register_assert_rewrite("sockjs_clients")

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class RunningBroker:
    """A ``python -m broker`` child process on an ephemeral loopback port."""

    def __init__(self, server):
        self.server = server
        self.url = server.url
        self.origin = server.url.rsplit("/", 1)[0]

    def request(self, method, path, body=None, headers=None):
        """(status, parsed JSON or text body) of one HTTP request to the broker."""
        request = urllib.request.Request(self.origin + path, data=body, method=method,
                                         headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                status, data, ctype = response.status, response.read(), response.headers
        except urllib.error.HTTPError as error:
            status, data, ctype = error.code, error.read(), error.headers
        if ctype.get("Content-Type", "").startswith("application/json"):
            return status, json.loads(data)
        return status, data.decode()

    def stats(self):
        return self.request("GET", "/stats")[1]


@pytest.fixture
def start_server():
    """Start servers by argv (run from the checkout); each is stopped after the test."""
    started = []

    def start(*argv, env=None):
        server = launch(list(argv), env=dict(env or {}, PYTHONPATH=ROOT))
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def start_broker(start_server):
    """Start brokers with extra flags (and, by keyword, extra environment, and
    an open-files limit, soft and hard, set with ``prlimit``)."""

    def start(*flags, env=None, open_files=None):
        limit = ["prlimit", "--nofile=%d:%d" % (open_files, open_files)] if open_files else []
        return RunningBroker(start_server(*limit, sys.executable, "-m", "broker", "--host", "127.0.0.1",
                                          "--port", "0", "--log-level", "warning", *flags, env=env))

    return start


@pytest.fixture
def broker(start_broker):
    return start_broker("--publish-token", "s3cret", "--replay", "0")
