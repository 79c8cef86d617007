"""``python -m loadtest soak`` against a real broker over loopback, and its rules without sockets."""

import os

import pytest

from loadtest import command_line
from loadtest.scenarios import soak


@pytest.mark.parametrize("argv, message", [
    (["--duration", "60", "--warm-up-seconds", "60"], "--warm-up-seconds (60 s) must be shorter than --duration (60 s)"),
    (["--duration", "60", "--warmup", "60"], "--warm-up-seconds (60 s) must be shorter than --duration (60 s)"),
    (["--duration", "5", "--warm-up-seconds", "1", "--sample", "10"], "--sample (10 s) must not be longer"),
    (["--url", "http://127.0.0.1:8080/broadcast"], "--url needs --server-pid"),
    (["--url", "http://10.0.0.1:8080/broadcast", "--server-pid", "1"], "only loopback servers"),
    (["--server-pid", "1"], "--server-pid, --label and --tls-ca go with --url"),
    (["--url", "http://127.0.0.1:8080/broadcast", "--server-pid", str(os.getpid()), "--broker-flags", "--warm-up-sessions 9"],
     "--broker-flags goes with the servers soak launches, not --url"),
    (["--servers", "sockjs-deno"], "unknown server sockjs-deno"),
    (["--churn-size", "0"], "argument --churn-size: must be 1 or more"),
    (["--warm-up-seconds", "-1"], "argument --warm-up-seconds: must be a number of 0 or more"),
    (["--warm-up", "-1"], "argument --warm-up/--warmup: must be a number of 0 or more"),
])
def test_bad_arguments_are_refused_before_anything_runs(argv, message, capsys, tmp_path):
    with pytest.raises(SystemExit) as exit:
        command_line.main(["soak"] + argv + ["--out", str(tmp_path / "r.jsonl")])
    assert exit.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "r.jsonl").exists()


def test_held_figures_are_the_buffered_bytes_and_the_gc_heap_in_kib():
    pypy = {"slow_consumers": {"behind": 2, "unsent_bytes": 10240, "max_buffer": 1 << 20},
            "gc": {"major_started": 1, "major_finished": 1,
                   "heap": {"used_bytes": 64 << 20, "live_bytes": None}}}
    assert soak.held_figures(pypy) == {"behind": 2, "unsent_kb": 10, "gc_used_kb": 65536, "gc_live_kb": None}
    cpython = {"slow_consumers": {"behind": 0, "unsent_bytes": 0}, "gc": {"freezes": 3}}
    assert soak.held_figures(cpython) == {"behind": 0, "unsent_kb": 0, "gc_used_kb": None, "gc_live_kb": None}
    assert soak.held_figures({"connections_total": 0}) == dict.fromkeys(["behind", "unsent_kb", "gc_used_kb",
                                                                          "gc_live_kb"])
    assert soak.held_figures(None) is None


def test_the_duration_is_rounded_up_to_whole_samples():
    assert soak.samples_for(600, 5) == 120
    assert soak.samples_for(601, 5) == 121
    assert soak.samples_for(0.3, 1) == 1
    assert soak.samples_for(0.3, 0.1) == 3
