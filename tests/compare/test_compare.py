"""``python -m loadtest compare`` at tiny scale, end to end, with real servers and clients."""

import collections
import resource
import json
import re
import subprocess
import sys

import pytest

from loadtest import command_line
from loadtest import records as schema

TINY = [
    "--servers", "sockjs-tornado,sockjs-node", "--levels", "4", "--rates", "5",
    "--step-seconds", "0.4", "--pause", "0.1", "--cpu-load", "8x10,6x5", "--cpu-seconds", "0.5",
    "--idle-connections", "30", "--procs", "2",
]


def test_compare_measures_each_server_and_the_floor(tmp_path):
    out = tmp_path / "compare.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare"] + TINY + ["--out", str(out)],
        capture_output=True, text=True, timeout=50,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[0]["type"] == "run"
    assert [schema.parse(r).as_dict() for r in records] == records
    by_type = collections.defaultdict(list)
    for record in records:
        by_type[record["type"]].append(record)
    servers = ["sockjs-tornado", "sockjs-node"]
    assert [r["server"] for r in by_type["server"]] == servers
    assert [r["runtime"].split()[0] for r in by_type["server"]] == ["CPython", "Node"]
    assert all(r["cpu"] == 0 for r in by_type["server"])
    for kind in ("level", "idle_rss"):
        assert [r["server"] for r in by_type[kind]] == servers, kind
    assert [r["server"] for r in by_type["cpu_per_msg"]] == [server for server in servers for _ in range(2)]
    for step in by_type["step"]:
        assert (step["level"], step["rate"], step["lost"]) == (4, 5.0, 0)
        assert step["received"] == step["sent"] * 4
    for fixed, load in zip(by_type["cpu_per_msg"], [(8, 10.0), (6, 5.0)] * 2):
        assert (fixed["level"], fixed["rate"], fixed["lost"]) == load + (0,)
        assert fixed["cpu_us_per_msg"] is not None
    for idle in by_type["idle_rss"]:
        assert idle["connections"] == 30 and idle["rss_kb"] >= idle["rss_before_kb"]
    (floor,) = by_type["floor"]
    assert floor["connections"] == 8 and floor["drain_ok"]
    assert "vs sockjs-node" in done.stdout
    assert "at 6 clients x 5 msgs/s" in done.stdout


def test_measure_cpu_alone_is_the_fan_out_benchmark(tmp_path):
    out = tmp_path / "fanout.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-node", "--measure", "cpu",
         "--cpu-load", "8x10", "--cpu-seconds", "0.5", "--pause", "0.1", "--out", str(out)],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    types = [json.loads(line)["type"] for line in out.read_text().splitlines()]
    assert types == ["run", "server", "cpu_per_msg", "floor"]


def test_several_transports_are_measured_in_turn_each_record_saying_its_own(tmp_path):
    out = tmp_path / "transports.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-node", "--transport", "websocket,xhr-polling",
         "--levels", "4", "--rates", "5", "--step-seconds", "0.4", "--pause", "0.1", "--cpu-load", "6x5",
         "--cpu-seconds", "0.5", "--idle-connections", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=50,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [schema.parse(r).as_dict() for r in records] == records
    under_load = ["step", "level", "cpu_per_msg"]
    assert [r["type"] for r in records] == ["run", "server"] + under_load * 2 + ["idle_rss", "idle_rss", "floor"]
    assert records[0]["transport"] == "websocket,xhr-polling"
    # each transport's sweep, then its fixed load, on the one server process
    assert [r["transport"] for r in records[2:8]] == ["websocket"] * 3 + ["xhr-polling"] * 3
    for step in (records[2], records[5]):
        assert (step["level"], step["rate"], step["lost"], step["received"]) == (4, 5.0, 0, step["sent"] * 4)
    websocket, polling = records[4], records[7]
    assert [(r["transport"], r["lost"]) for r in (websocket, polling)] == [("websocket", 0), ("xhr-polling", 0)]
    assert websocket["reopened"] == 0 and polling["reopened"] > 0  # every poll after a client's first
    assert [(r["transport"], r["connections"]) for r in records[8:10]] == [("websocket", 10), ("xhr-polling", 10)]
    assert "sockjs-node over xhr-polling: " in done.stderr
    assert "sockjs-node over xhr-polling, 4 clients: sweep done" in done.stderr
    # the knee and the costs, each in a row per transport
    assert len(re.findall(r"^xhr-polling +sockjs-node ", done.stdout, re.MULTILINE)) == 2, done.stdout
    assert re.search(r"^xhr-polling +sockjs-node +4 +[0-9,]+\+ +5 ", done.stdout, re.MULTILINE), done.stdout


def test_a_mix_is_measured_as_one_audience_named_in_its_records(tmp_path):
    out = tmp_path / "mix.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-node", "--measure", "cpu,idle",
         "--mix", "websocket=50,xhr-polling=50", "--cpu-load", "8x5", "--cpu-seconds", "0.5", "--pause", "0.1",
         "--idle-connections", "10", "--out", str(out)],
        capture_output=True, text=True, timeout=50,
    )
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    mix = "mix:websocket=50,xhr-polling=50"
    assert [(r["type"], r.get("transport")) for r in records] == [
        ("run", mix), ("server", None), ("cpu_per_msg", mix), ("idle_rss", mix), ("floor", None)]
    fixed = records[2]
    assert (fixed["lost"], fixed["dropped"], fixed["overloaded"]) == (0, 0, False)
    assert fixed["reopened"] > 0  # the polling half polled again
    assert "Cost per delivered message over %s at 8 clients x 5 msgs/s" % mix in done.stdout


def test_a_warm_up_runs_the_first_fixed_load_unrecorded(tmp_path):
    out = tmp_path / "fanout.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-node", "--measure", "cpu",
         "--cpu-load", "8x10,6x5", "--cpu-seconds", "0.5", "--warm-up-seconds", "1", "--pause", "0.1", "--out", str(out)],
        capture_output=True, text=True, timeout=30,
    )
    assert done.returncode == 0, done.stderr
    warmed = re.search(r"sockjs-node: warmed up at 8x10 for 1 s \((\d+) messages delivered\), not recorded",
                       done.stderr)
    assert warmed and int(warmed.group(1)) > 0, done.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["type"] for r in records] == ["run", "server", "cpu_per_msg", "cpu_per_msg", "floor"]
    assert [(r["level"], r["rate"]) for r in records if r["type"] == "cpu_per_msg"] == [(8, 10.0), (6, 5.0)]


def test_unavailable_server_is_skipped_with_the_reason(tmp_path, monkeypatch):
    monkeypatch.setattr("loadtest.contenders.registry.PYPY_CANDIDATES", (str(tmp_path / "none"),))
    assert command_line.main(["compare", "--servers", "broker-pypy", "--out", str(tmp_path / "r.jsonl")]) == 1
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("argv, message", [
    (["--servers", "sockjs-deno"], "unknown server sockjs-deno"),
    (["--cpu-load", "1000"], "expected CLIENTSxRATE"),
    (["--server-cpu", "1", "--client-cpu", "1"], "must differ"),
    (["--measure", "sweep,speed"], "unknown measurement speed"),
])
def test_bad_arguments_are_refused_clearly(argv, message, capsys):
    with pytest.raises(SystemExit) as exit:
        command_line.main(["compare"] + argv)
    assert exit.value.code == 2
    assert message in capsys.readouterr().err


def test_a_fixed_load_that_cannot_connect_says_why(tmp_path):
    few_files = lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (64, 64))  # noqa: E731
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "sockjs-tornado", "--measure", "cpu",
         "--cpu-load", "200x10", "--cpu-seconds", "0.5", "--pause", "0.1",
         "--out", str(tmp_path / "r.jsonl")],
        capture_output=True, text=True, timeout=50, preexec_fn=few_files,
    )
    assert done.returncode == 1
    assert "sockjs-tornado: no CPU per delivered message at 200x10: connections failed" in done.stderr


def test_a_cluster_is_one_contender_with_its_processes_summed(tmp_path, redis_installed):
    out = tmp_path / "cluster.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "compare", "--servers", "cluster-cpython", "--brokers", "2",
         "--measure", "sweep,idle", "--levels", "6", "--rates", "10", "--step-seconds", "0.5", "--pause", "0.1",
         "--idle-connections", "40", "--out", str(out)],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    by_type = collections.defaultdict(list)
    for line in out.read_text().splitlines():
        record = json.loads(line)
        by_type[record["type"]].append(record)
    (server,) = by_type["server"]
    assert (server["server"], server["pid"], server["cpu"]) == ("cluster-cpython", None, 0)
    (step,) = by_type["step"]
    assert (step["lost"], step["received"]) == (0, step["sent"] * 6)  # each message reached both brokers' clients
    assert step["server_rss_kb"] > 2 * 20 * 1024  # two brokers and Redis, summed
    (idle,) = by_type["idle_rss"]
    assert idle["connections"] == 40 and idle["rss_before_kb"] > 2 * 20 * 1024
