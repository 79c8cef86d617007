"""``python -m loadtest soak`` launching contenders as ``compare`` does, at tiny scale."""

import subprocess
import sys
import result_lines


SERVERS = ["broker-cpython", "sockjs-node"]


def test_soak_launches_each_server_in_turn_and_churns_it(tmp_path):
    out = tmp_path / "soak.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "loadtest", "soak", "--servers", ",".join(SERVERS), "--clients", "5",
         "--rate", "10", "--duration", "2", "--sample", "1", "--warm-up-seconds", "1", "--churn", "--churn-waves", "1",
         "--churn-size", "3", "--churn-hold", "0.1", "--expiry", "1", "--broker-flags", "--warm-up-sessions 6",
         "--out", str(out)],
        capture_output=True, text=True, timeout=90,
    )
    assert done.returncode == 0, done.stderr
    (launch,) = [line for line in done.stderr.splitlines() if " -m broker " in line]
    assert launch.endswith(" --warm-up-sessions 6"), launch
    records = result_lines.read(str(out))
    assert records[0]["type"] == "run" and records[0]["command"][:4] == ["python", "-m", "loadtest", "soak"]
    per_server = [r["type"] for r in records if r.get("server") == SERVERS[0]]
    assert per_server == ["server", "soak_sample", "soak_sample", "soak", "churn_wave", "churn"]
    for server in SERVERS:
        (launched,) = [r for r in records if r["type"] == "server" and r["server"] == server]
        assert launched["cpu"] == 0 and launched["pid"]
        (summary,) = [r for r in records if r["type"] == "soak" and r["server"] == server]
        assert (summary["samples"], summary["lost"], summary["end"]) == (2, 0, "completed")
        assert summary["verdict"] in ("flat", "growing")
        (wave,) = [r for r in records if r["type"] == "churn_wave" and r["server"] == server]
        assert wave["opened"] == {"websocket": 3, "xhr_streaming": 3, "xhr_polling": 3}
    broker_churn, node_churn = [r for r in records if r["type"] == "churn"]
    assert broker_churn["settled"] is True and broker_churn["final_connections"] == 0
    # sockjs-node has no /stats: it is given the expiry time, and only its RSS tells
    assert node_churn["settled"] is None and node_churn["final_connections"] is None
    assert node_churn["settle_s"] >= 1
