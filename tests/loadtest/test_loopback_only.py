"""The load client floods what it points at, so every command refuses a target that is not
loopback, by every address its name resolves to, at the command line: exit 2, argparse's
message naming the option, and nothing sent."""

import socket
import subprocess
import sys

import pytest

from checkout import ROOT


@pytest.mark.parametrize("command, host", [
    (["ping", "--url"], "127.attacker.example"),  # a name that only starts like a loopback address
    (["latency", "--clients", "1", "--url"], "127.attacker.example"),
    (["ping", "--url"], "0.0.0.0"),  # which Linux would connect to this machine's listener
])
def test_a_target_that_is_not_loopback_is_refused_before_anything_is_sent(command, host):
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.settimeout(0)
        url = "http://%s:%d/broadcast" % (host, listener.getsockname()[1])
        result = subprocess.run([sys.executable, "-m", "loadtest"] + command + [url], cwd=ROOT,
                                capture_output=True, text=True, timeout=60)
        assert result.returncode == 2, result.stdout + result.stderr
        assert result.stderr.splitlines()[-1].startswith(
            "python -m loadtest %s: error: argument --url: only loopback servers may be load tested" % command[0]), \
            result.stderr
        assert "Traceback" not in result.stderr and result.stdout == ""
        with pytest.raises(BlockingIOError):
            listener.accept()
