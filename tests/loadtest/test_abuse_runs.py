"""python -m loadtest abuse: the three attacks against a real broker, briefly."""

import json
import subprocess
import sys

from loadtest.scenarios import abuse
from checkout import ROOT




def run(*argv):
    """The one result line of the command, run as its own (pinned) process."""
    done = subprocess.run([sys.executable, "-m", "loadtest", "abuse", "--servers", "broker-cpython", *argv],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert len(lines) == 1 and "traceback" not in lines[0], lines
    return lines[0]


def test_stalled_clients_are_cut_within_the_write_timeout():
    result = run("--attacks", "stalled", "--stalled", "20", "--publish-rate", "1000",
                 "--broker-flags", "--write-timeout 1")
    assert result["cut"] == 20
    assert result["cut_after_behind_s"]["max"] <= 1 + 1 + abuse.SAMPLE_S
    assert result["cost_mb"] < result["bound_mb"]


def test_a_flooder_is_cut_and_canaries_lose_nothing():
    result = run("--attacks", "flood", "--canaries", "5", "--canary-rate", "20", "--seconds", "2")
    assert result["one_flooder"]["attacker"] == {"connections": 1, "cut": 1,
                                                 "written_mb": result["one_flooder"]["attacker"]["written_mb"]}
    assert result["reconnecting_flooder"]["attacker"]["connections"] >= 1
    assert result["rate_limited_disconnects"] >= 2
    for step in (result["quiet"], result["one_flooder"], result["reconnecting_flooder"]):
        assert step["lost"] == 0 and step["sent"] > 0


def test_a_burst_is_held_to_the_accept_rate_and_every_refusal_says_when_to_retry():
    result = run("--attacks", "burst", "--burst", "500", "--burst-seconds", "1", "--accept-rate", "50",
                 "--canaries", "5", "--canary-rate", "20")
    totals = result["totals"]
    assert sum(totals.values()) == result["attempts"] == 500
    assert sum(sum(row.values()) for row in result["answers"].values()) == 500
    assert totals["bare_503"] == totals["other"] == totals["error"] == 0
    assert totals["retry_after"] > 0 and result["retry_after_s"]["min"] >= 1
    assert result["broker_refused"] == totals["retry_after"]
    assert set(result["kernel"]) == {"listen_overflows", "syn_retransmits"}
    assert 0 < result["sessions_admitted"] <= result["admitted_bound"] <= 50 * result["window_s"] + 50 + 1
    assert totals["admitted"] == result["sessions_admitted"] + result["answers"]["info"]["admitted"]
    for step in (result["quiet"], result["during_burst"]):
        assert step["lost"] == 0 and step["sent"] > 0 and step["server_cpu"] is not None and not step["client_bound"]
    assert set(result["verdict"]) == {"retry_after", "within_rate", "answered", "canary_p99", "no_stall",
                                      "nothing_lost", "covered", "passed"}
    assert result["verdict"]["retry_after"] and result["verdict"]["within_rate"] and result["verdict"]["answered"]
    assert result["verdict"]["covered"]  # the canaries measured the whole burst
