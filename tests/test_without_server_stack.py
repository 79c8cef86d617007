"""The load client, ``compare``, ``soak`` and ``plots`` run where neither Tornado nor sockjs-tornado can be imported.

Each command runs in a child process whose ``sitecustomize`` puts a finder in
front of ``sys.meta_path`` that refuses ``tornado`` and ``sockjs`` (and every
module under them), as if they were not installed. The servers under test run
outside it, as they would on another machine.
"""

import json
import os
import shutil
import subprocess
import sys

import pytest

import result_lines
from checkout import ROOT

REFUSED = ("tornado", "sockjs")

BLOCKER = '''
import sys

REFUSED = %r


class NotInstalled:
    """Refuses to import what this environment pretends not to have."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in REFUSED:
            raise ModuleNotFoundError("%%s is not installed here" %% name, name=name)
        return None


sys.meta_path.insert(0, NotInstalled())
''' % (REFUSED,)


@pytest.fixture(scope="module")
def without_server_stack(tmp_path_factory):
    """An environment for child processes in which Tornado and sockjs-tornado are missing."""
    directory = tmp_path_factory.mktemp("no-server-stack")
    (directory / "sitecustomize.py").write_text(BLOCKER)
    return dict(os.environ, PYTHONPATH=os.pathsep.join([str(directory), ROOT]))


def run(env, *argv, timeout=60):
    return subprocess.run([sys.executable] + list(argv), cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_environment_really_lacks_them(without_server_stack):
    for module in ("tornado", "sockjs.tornado", "tornado.web", "broker.app"):
        done = run(without_server_stack, "-c", "import %s" % module)
        assert done.returncode == 1
        assert "is not installed here" in done.stderr


@pytest.mark.parametrize("command", [[], ["compare"], ["soak"], ["selftest"], ["ping"]])
def test_every_command_starts(without_server_stack, command):
    done = run(without_server_stack, "-m", "loadtest", *command, "--help")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("usage: python -m loadtest")


def test_a_sweep_soak_and_figures_run_against_a_broker(without_server_stack, start_broker, tmp_path):
    broker = start_broker()
    out = str(tmp_path / "sweep.jsonl")
    done = run(without_server_stack, "-m", "loadtest", "--url", broker.url, "--clients", "5", "--rate", "10",
               "--step-seconds", "1", "--pause", "0", "--out", out)
    assert done.returncode == 0, done.stderr
    (step,) = [r for r in result_lines.read(out) if r["type"] == "step"]
    assert step["sent"] == 10 and step["received"] == 50 and step["lost"] == 0

    soaked = str(tmp_path / "soak.jsonl")
    done = run(without_server_stack, "-m", "loadtest", "soak", "--url", broker.url, "--server-pid",
               str(broker.server.pid), "--clients", "5", "--rate", "10", "--duration", "2", "--sample", "1",
               "--warm-up-seconds", "1", "--out", soaked)
    assert done.returncode == 0, done.stderr
    (summary,) = [r for r in result_lines.read(soaked) if r["type"] == "soak"]
    assert (summary["samples"], summary["lost"], summary["end"]) == (2, 0, "completed")

    pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")
    done = run(without_server_stack, "-m", "plots", out, "-o", str(tmp_path / "figures"))
    assert done.returncode == 0, done.stderr
    assert "rtt_mean.png" in os.listdir(str(tmp_path / "figures"))


@pytest.mark.skipif(shutil.which("node") is None, reason="sockjs-node needs Node.js")
def test_compare_measures_sockjs_node_and_the_floor(without_server_stack, tmp_path):
    out = str(tmp_path / "compare.jsonl")
    done = run(without_server_stack, "-m", "loadtest", "compare", "--servers", "sockjs-node", "--measure", "cpu",
               "--cpu-load", "8x10", "--cpu-seconds", "0.5", "--pause", "0.1", "--out", out)
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in open(out)]
    assert [r["type"] for r in records] == ["run", "server", "cpu_per_msg", "floor"]
    assert records[2]["lost"] == 0 and records[3]["drain_ok"]
