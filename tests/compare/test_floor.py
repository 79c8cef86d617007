import json
import subprocess
import sys

from loadtest import floor


def test_text_frame_is_an_unmasked_rfc6455_text_frame():
    frame = floor.text_frame(b'a["x"]')
    assert frame == b'\x81\x06a["x"]'


def test_floor_sends_every_round_and_reports_cpu_per_send():
    done = subprocess.run(
        [sys.executable, "-m", "loadtest.floor", "--connections", "20", "--rate", "2000", "--seconds", "0.5"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 0, done.stderr
    record = json.loads(done.stdout)
    assert record["type"] == "floor" and record["drain_ok"]
    assert record["sends"] % 20 == 0 and record["sends"] >= 20 * 40
    assert record["blocked"] == 0
    assert record["cpu_us_per_send"] >= 0
