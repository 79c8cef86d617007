"""The SockJS protocol suite (sockjs-protocol), unmodified, against ``python -m broker.conformance``.

The suite is ``../shared/sockjs-protocol`` beside this checkout (it is in no
package registry); it runs on Python 2.7, its dependencies in
``.sockjs-protocol/`` (``bash .ci/install-sockjs-protocol``, which CI runs;
there a missing suite fails the test). Every one of its 68 tests passes but
hixie-76's ``Websocket.test_haproxy``, declined by design (docs/protocol.rst):
the broker answers a draft-76 handshake 426.

The server is this test's own: the suite reuses session names, so a server
that served it once must not serve it again within five seconds.
"""

import os
import re
import subprocess
import sys

import pytest
from checkout import ROOT, python2_suite

from loadtest.contenders.child_process import launch

RUN = os.path.join(ROOT, ".sockjs-protocol", "run")
DECLINED = {"Websocket.test_haproxy"}
# "test_name (__main__.Class) ... ok", as unittest's verbose runner reports each test (a test
# with a docstring has its first line between the name and the dots).
_RESULT = re.compile(r"^(test_\w+) \(__main__\.(\w+)\)(?:\n.*?)? \.\.\. (\w+)$", re.MULTILINE)


@pytest.fixture
def suite():
    return python2_suite(RUN, "install-sockjs-protocol")


def test_the_sockjs_protocol_suite_passes_but_hixie_76(suite):
    server = launch([sys.executable, "-m", "broker.conformance", "--host", "127.0.0.1", "--port", "0"])
    try:
        origin = server.url.rpartition("/")[0]
        done = subprocess.run([suite, "-v"], env=dict(os.environ, SOCKJS_URL=origin), timeout=100,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    finally:
        server.stop()
    results = {"%s.%s" % (case, test): outcome for test, case, outcome in _RESULT.findall(done.stdout)}
    assert len(results) == 68, done.stdout[-4000:]
    failed = {name: outcome for name, outcome in results.items() if outcome != "ok"}
    assert set(failed) == DECLINED, done.stdout[-4000:]
