"""The load test the getting-started page gives, run as written against a real broker, prints what
it and the load-testing page show, and ``python -m plots`` draws the file it names.

The command runs with bash in a fresh directory, as a reader pastes it, against the test's broker
(its ``--url`` the broker's, its broker on an ephemeral port rather than the page's), with two
variables in its environment (every option of ``python -m loadtest`` reads one):
``LOADTEST_STEP_SECONDS`` and ``LOADTEST_PAUSE``, short steps. Its output is
compared with the pages' line by line, numbers and the part of a line that names what differs
from run to run (after the first ``;``, `` (`` or ``, ``, and after ``stopped:``) left out.
"""

import os
import re
import shlex
import subprocess
import sys

import pytest

import doc_blocks

GETTING_STARTED = doc_blocks.page("getting-started")
OUTPUTS = ((GETTING_STARTED, "load-test-output"), (doc_blocks.page("load-testing"), "sweep-output"))
RUN_TIMEOUT_S = 120
NUMBER = re.compile(r"\d[\d,.]*")
CUT = re.compile(r";| \(|, ")
PLOT = re.compile(r"figures and tables: (python -m plots \S+)$")


def skeleton(line):
    """What must match of an output line: its words before what differs from run to run, numbers as N."""
    line = NUMBER.sub("N", line.replace(" CLIENT-BOUND", ""))
    if "stopped: " in line:
        return line[:line.index("stopped: ") + len("stopped:")]
    return CUT.split(line, 1)[0]


def shape(lines):
    """The skeletons of ``lines``, a run of equal ones (the steps) as one."""
    skeletons = [skeleton(line) for line in lines if line != "..."]
    return [s for n, s in enumerate(skeletons) if n == 0 or s != skeletons[n - 1]]


def test_the_getting_started_load_test_prints_what_the_pages_show(start_broker, tmp_path):
    broker_line, command, stop = doc_blocks.command_lines(doc_blocks.block_holding(GETTING_STARTED, "-m loadtest"))
    words = shlex.split(broker_line)
    assert words[:3] == [".venv/bin/python", "-m", "broker"] and words[-1] == "&", broker_line
    assert stop == "kill %1", "the page stops the broker it started in the background"
    port = words.index("--port")
    broker = start_broker(*(words[3:port] + words[port + 2:-1]))
    url = "http://127.0.0.1:%s/broadcast" % words[port + 1]
    assert command.startswith(".venv/bin/python -m loadtest ") and command.endswith(" --url " + url), command
    command = command.replace(".venv/bin/python", sys.executable, 1).replace(url, broker.url)
    done = subprocess.run(
        ["bash", "-c", command], cwd=str(tmp_path),
        env=dict(os.environ, LOADTEST_STEP_SECONDS="0.2", LOADTEST_PAUSE="0.05"),
        capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
    assert done.returncode == 0, done.stderr
    printed = done.stderr.splitlines() + done.stdout.splitlines()
    for page, name in OUTPUTS:
        shown = doc_blocks.named_block(page, name).splitlines()
        assert shape(shown) == shape(printed), (page, printed)

    pytest.importorskip("matplotlib")
    plot = PLOT.search(printed[-1]).group(1)
    doc_blocks.run_shell(plot.replace("python", sys.executable, 1), cwd=str(tmp_path), timeout=RUN_TIMEOUT_S)
    assert (tmp_path / plot.split()[-1].replace(".jsonl", "") / "rtt_mean.png").exists()
