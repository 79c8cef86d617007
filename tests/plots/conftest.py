import subprocess
import sys

import pytest

from loadtest.contenders import registry
import result_lines


@pytest.fixture(scope="session")
def compare_results(tmp_path_factory):
    """Records of a real (tiny) ``compare`` run: two servers, two levels, two rates."""
    registry.ensure_node_modules()
    out = tmp_path_factory.mktemp("compare") / "results.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-tornado,sockjs-node",
         "--levels", "3,6", "--rates", "4,8", "--step-seconds", "0.3", "--pause", "0.1",
         "--cpu-load", "6x10", "--cpu-seconds", "0.5", "--idle-connections", "20", "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    return out, result_lines.read(str(out))
