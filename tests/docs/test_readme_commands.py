"""The commands the README and the docs pages (getting started, protocol) give, run as written.

The broker each block starts is started by its own line's variables and flags (on an
ephemeral port, its address substituted in the lines that follow); its ``curl`` lines run
with bash and its Python runs with this interpreter, and a listening client must receive
what they publish.
"""

import ast
import json
import os
import re
import shlex
import subprocess
import sys
from contextlib import closing
from decimal import Decimal

import doc_blocks
from checkout import ROOT
from sockjs_clients import WebSocketClient

EXAMPLE_ORIGIN = "http://127.0.0.1:8080"
CI_RUN = os.path.join(ROOT, ".ci", "run")
GETTING_STARTED = doc_blocks.page("getting-started")


def ci_lines():
    with open(CI_RUN) as f:
        return [line.strip() for line in f if line.strip() and not line.lstrip().startswith("#")]


def readme():
    with open(doc_blocks.README) as f:
        return f.read()


def start_as_written(start_broker, line):
    """The broker ``line`` starts (``NAME=value ... .venv/bin/python -m broker FLAGS &``), on an
    ephemeral port whatever its ``--port``; and the origin the page gives it
    (``http://127.0.0.1:PORT``, 8080 without ``--port``)."""
    words = shlex.split(line)
    environment = {}
    while re.match(r"^[A-Z_]+=", words[0]):
        name, _, value = words.pop(0).partition("=")
        environment[name] = value
    assert words[:3] == [".venv/bin/python", "-m", "broker"], "not the quick start's broker: %s" % line
    flags = [word for word in words[3:] if word != "&"]
    port = "8080"
    if "--port" in flags:
        at = flags.index("--port")
        port = flags[at + 1]
        del flags[at:at + 2]
    return start_broker(*flags, env=environment), "http://127.0.0.1:" + port


def run_python(source, broker, origin=EXAMPLE_ORIGIN):
    """What ``source`` prints, run with this interpreter against ``broker``, which ``source``
    calls ``origin``."""
    assert origin in source, source
    done = subprocess.run([sys.executable, "-c", source.replace(origin, broker.origin)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


def quick_start_broker(start_broker):
    """The broker the quick start runs, as its last command starts it."""
    quick_start = doc_blocks.block_holding(doc_blocks.README, "pip install -q -e .")
    broker, origin = start_as_written(start_broker, quick_start.split(" && ")[-1])
    assert origin == EXAMPLE_ORIGIN, "the pages' commands name the quick start's broker %s" % EXAMPLE_ORIGIN
    return broker


def publishing_block(start_broker, block):
    """Start the quick start's broker, connect a listener, run ``block``'s lines against it;
    ``(broker, listener, what each line printed)``."""
    broker = quick_start_broker(start_broker)
    listener = WebSocketClient(broker.url).open()
    rest = doc_blocks.command_lines(block)
    printed = [doc_blocks.run_shell(doc_blocks.substituted(line, {EXAMPLE_ORIGIN: broker.origin})) for line in rest]
    return broker, listener, printed


def test_the_readme_test_command_is_the_one_ci_runs():
    (command,) = [line for line in ci_lines() if ".venv/bin/tox" in line]
    assert "    " + command + "\n" in readme()


def test_the_readme_installs_for_the_tests_what_ci_installs():
    (listed,) = re.findall(r"``apt-get install -y ([^`]+)``", readme())
    ci_packages = re.search(r"for pkg in ([^;]+);", open(CI_RUN).read()).group(1).split()
    assert sorted(listed.split()) == sorted(ci_packages)


def test_the_quick_start_is_the_same_command_on_every_page():
    quick_start = doc_blocks.block_holding(doc_blocks.README, "pip install -q -e .")
    assert doc_blocks.block_holding(GETTING_STARTED, "pip install -q -e .") == quick_start
    assert quick_start.endswith(" .venv/bin/python -m broker"), quick_start


def test_the_demo_pages_counter_moves_as_the_getting_started_page_says(start_broker):
    block = doc_blocks.block_holding(GETTING_STARTED, "op=add")
    broker, listener, (answer,) = publishing_block(start_broker, block)
    with closing(listener):
        assert json.loads(answer)["recipients"] == 1 and json.loads(answer)["value"] == "1234.50"
        assert listener.receive() == [{"counter": "raised", "value": "1234.50"}]
        (add,) = doc_blocks.command_lines(block)
        assert json.loads(doc_blocks.run_shell(doc_blocks.substituted(add, {EXAMPLE_ORIGIN: broker.origin})))[
            "value"] == "2469.00", "as the page says"


def test_the_live_counters_broker_runs_beside_the_quick_starts_and_its_page_names_it():
    (line,) = doc_blocks.command_lines(doc_blocks.block_holding(GETTING_STARTED, "--no-client-publish"))
    port = shlex.split(line)[shlex.split(line).index("--port") + 1]
    assert port != EXAMPLE_ORIGIN.rsplit(":", 1)[1], "the quick start's broker holds that port"
    page = doc_blocks.block_holding(GETTING_STARTED, "Raised so far")
    assert page.count("http://127.0.0.1:%s/" % port) == 3 and EXAMPLE_ORIGIN not in page, page
    load_test = doc_blocks.command_lines(doc_blocks.block_holding(GETTING_STARTED, "-m loadtest"))
    ports = {re.search(r"--port (\d+)", load_test[0]).group(1), re.search(r":(\d+)/", load_test[1]).group(1)}
    assert len(ports) == 1 and not ports & {port, "8080"}, load_test


def test_the_live_counters_backend_publishes_every_total(start_broker):
    broker, origin = start_as_written(start_broker, doc_blocks.block_holding(GETTING_STARTED, "--no-client-publish"))
    backend = doc_blocks.named_block(GETTING_STARTED, "live-counter-backend")
    assert "time.sleep(1)" in backend
    with WebSocketClient(broker.url) as listener:
        printed = run_python(backend.replace("time.sleep(1)", "time.sleep(0.001)"), broker, origin)
        answers = [ast.literal_eval(line) for line in printed.splitlines()]
        assert len(answers) == 100 and {answer["recipients"] for answer in answers} == {1}, answers[:3]
        assert answers[-1]["value"] == "2499.00", "as the page says"
        totals = []
        while not totals or totals[-1] != "2499.00":
            totals += [message["value"] for message in listener.receive()]
        assert [Decimal(total) for total in totals] == sorted(set(map(Decimal, totals))), "each once, in order"
    assert json.loads(doc_blocks.run_shell("curl -s %s/stats" % broker.origin))["messages_in"] == 100


def test_the_protocol_pages_retried_publish_publishes_once(start_broker):
    broker = start_broker("--publish-token", "s3cret")
    command = doc_blocks.command_lines(doc_blocks.block_holding(doc_blocks.page("protocol"), "Idempotency-Key:"))
    (line,) = [doc_blocks.substituted(line, {EXAMPLE_ORIGIN: broker.origin}) for line in command]
    with WebSocketClient(broker.url) as listener:
        first, retry = doc_blocks.run_shell(line), doc_blocks.run_shell(line)
        assert json.loads(first)["recipients"] == 1 and retry == first, (first, retry)
        listener.send("after")
        assert listener.collect(2) == ["thank you, Ada", "after"], "published once, then the next"
