"""Autobahn|Testsuite's fuzzing client against the raw websocket (``/websocket``).

Cases 1-7 and 10 (framing, pings, reserved bits, opcodes, fragmentation,
UTF-8, closing, sizes; 9 measures speed, 12-13 need compression, which is never
negotiated). The broker runs in chat mode, so every message comes back to its
sender as the echo the suite expects. Every case must be OK or INFORMATIONAL,
never NON-STRICT (a broken frame noticed later than it could be), except the
binary cases (1.2.*): the room carries text, and a binary message is closed
with 1003.

``wstest`` runs on Python 2.7: ``bash .ci/install-autobahn`` installs it into
``.autobahn/`` (CI does; there a missing suite fails the test).
"""

import json
import os
import subprocess

import pytest
from checkout import ROOT, python2_suite

WSTEST = os.path.join(ROOT, ".autobahn", "wstest")
CASES = ["1.*", "2.*", "3.*", "4.*", "5.*", "6.*", "7.*", "10.*"]
BINARY_CASES = "1.2."
UNSUPPORTED_DATA = 1003


@pytest.fixture
def wstest():
    return python2_suite(WSTEST, "install-autobahn")


@pytest.mark.timeout(600)
def test_the_raw_websocket_passes_autobahn(start_broker, wstest, tmp_path):
    broker = start_broker("--client-rate", "0", "--max-message-size", "16MiB")
    spec = {
        "outdir": str(tmp_path / "reports"),
        "servers": [{"agent": "broker", "url": "ws" + broker.url[len("http"):] + "/websocket"}],
        "cases": CASES,
        "exclude-cases": [],
        "exclude-agent-cases": {},
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    done = subprocess.run([wstest, "--mode", "fuzzingclient", "--spec", "spec.json"], cwd=str(tmp_path),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=540)
    assert done.returncode == 0, done.stdout[-4000:]
    with open(tmp_path / "reports" / "index.json") as f:
        results = json.load(f)["broker"]
    assert len(results) > 240, "Autobahn ran %d cases" % len(results)

    binary = {case: result["remoteCloseCode"] for case, result in results.items() if case.startswith(BINARY_CASES)}
    assert binary and set(binary.values()) == {UNSUPPORTED_DATA}, binary
    wrong = {case: (result["behavior"], result["behaviorClose"]) for case, result in results.items()
             if case not in binary and result["behavior"] not in ("OK", "INFORMATIONAL")}
    assert not wrong, "not OK: %s (reports in %s)" % (sorted(wrong.items()), tmp_path / "reports")
