"""python -m loadtest rooms against real brokers it starts, briefly: every field of its results, and no
viewer ever given another room's message, one room a session or several."""

import dataclasses
import subprocess
import sys

import pytest

from loadtest import records
from checkout import ROOT
import result_lines


def rooms(tmp_path, *argv):
    """The lines of a run of the command (as its own process), which must exit 0: ``(lines, rooms records)``."""
    out = tmp_path / "rooms.jsonl"
    done = subprocess.run([sys.executable, "-m", "loadtest", "rooms", "--out", str(out), "--duration", "2",
                           "--room-rate", "5", "--idle-rooms", "20", *argv], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = result_lines.read(str(out))
    return lines, [records.parse(line) for line in lines if line["type"] == "rooms"]


def assert_isolated_and_whole(run, viewers):
    """Every viewer connected to the end with every message of its rooms, once, and none of another room's."""
    assert (run.viewers, run.connections, run.dropped) == (viewers, viewers, 0), run
    assert (run.foreign, run.short, run.extra) == (0, 0, 0), run
    # Publishing stops at --duration even with messages due: a loaded machine's publisher falls
    # behind (2 of 10 once, beside the side-by-side tier), never past the schedule.
    assert 0 < run.published <= round(run.rooms * 5 * 2), run
    assert run.received >= run.published, run
    assert run.end == "completed"


def assert_joins_measured(run, public):
    """The joins' figures: from the first connect to the last join, the brokers' CPU then, over the viewers."""
    assert run.private is not public
    # The seconds are rounded to the millisecond, the figures made of them are not: a few viewers
    # join in a few milliseconds, where half of one is a tenth of the time.
    half_ms = 0.0005
    assert run.join_s > 0, run
    fastest = run.viewers / max(run.join_s - half_ms, 1e-6) + 0.05
    assert run.viewers / (run.join_s + half_ms) - 0.05 <= run.joins_per_s <= fastest, run
    assert list(run.join_cpu_s) == list(run.cpu_s) and all(seconds >= 0 for seconds in run.join_cpu_s.values())
    rounding_us = half_ms * len(run.join_cpu_s) / run.viewers * 1e6 + 0.05
    assert run.cpu_us_per_join == pytest.approx(sum(run.join_cpu_s.values()) / run.viewers * 1e6, abs=rounding_us)


def test_a_sweep_of_rooms_records_each_on_a_broker_of_its_own_with_every_field(tmp_path):
    lines, runs = rooms(tmp_path, "--rooms", "1,3", "--viewers", "9", "--skew", "hot:0.5")
    assert [line["type"] for line in lines] == ["run", "server", "rooms", "server", "rooms"]
    assert lines[1]["pid"] != lines[3]["pid"], "each number of rooms on a broker started afresh"
    assert list(lines[2]) == ["type"] + [field.name for field in dataclasses.fields(records.ManyRooms)]
    one, three = runs
    assert (one.rooms, three.rooms, three.skew, three.rooms_per_viewer) == (1, 3, "hot:0.5", 1)
    assert (one.hot_viewers, three.hot_viewers) == (9, 5), "hot:0.5 of 9 viewers over 3 rooms: 5, 2 and 2"
    for run in runs:
        assert_isolated_and_whole(run, 9)
        assert run.rtt_ms["p99"] > 0 and run.hot_rtt_ms["p99"] > 0
        assert run.cpu_us_per_delivery > 0 and 0 < run.server_cpu < 1.5 and run.deliveries_per_s > 0
        assert list(run.cpu_s) == ["broker1"] and run.cpu_s["broker1"] > 0
        assert list(run.idle_cpu) == ["broker1"] and 0 <= run.idle_cpu["broker1"] < 1.5
        assert run.cpu_window_s >= run.duration_s, "from the first publish to the last delivery"
        assert run.idle_rooms == 20 and run.rss_per_idle_room_kb is not None
        assert 0 < run.rss_start_kb and all(kb > 0 for kb in (run.rss_idle_kb, run.rss_joined_kb, run.rss_end_kb))
        assert_joins_measured(run, public=True)
    assert one.tail_rtt_ms["p99"] is None and three.tail_rtt_ms["p99"] > 0, "one room is all hot"


def test_viewers_of_several_rooms_over_one_session_get_each_room_s_messages_and_no_other_s(tmp_path):
    _, (run,) = rooms(tmp_path, "--rooms", "4", "--viewers", "6", "--rooms-per-viewer", "2", "--transport",
                      "xhr-streaming", "--idle-rooms", "0")
    assert (run.transport, run.rooms_per_viewer, run.idle_rooms, run.rss_per_idle_room_kb) == (
        "xhr-streaming", 2, 0, None)
    assert_isolated_and_whole(run, 6)


@pytest.mark.parametrize("transport, rooms_per_viewer, procs", [
    ("websocket", 1, 1), ("xhr-streaming", 2, 1), ("xhr-polling", 1, 2)])
def test_private_rooms_are_joined_with_each_viewer_s_token_and_every_message_comes(tmp_path, transport,
                                                                                   rooms_per_viewer, procs):
    """A viewer without the token naming its rooms would be closed (3015, 3016) and given nothing: each has
    every message of its rooms, in two load processes too (each viewer's token found by its id)."""
    _, (run,) = rooms(tmp_path, "--private", "--rooms", "3", "--viewers", "6", "--rooms-per-viewer",
                      str(rooms_per_viewer), "--transport", transport, "--idle-rooms", "0", "--procs", str(procs))
    assert (run.transport, run.rooms_per_viewer) == (transport, rooms_per_viewer)
    assert_isolated_and_whole(run, 6)
    assert_joins_measured(run, public=False)


def test_what_cannot_run_exits_2_before_any_broker_starts(tmp_path):
    for argv, said in ((["--transport", "raw"], "--transport raw"), (["--rooms", "2", "--rooms-per-viewer", "3"],
                                                                     "more than the 2 rooms")):
        done = subprocess.run([sys.executable, "-m", "loadtest", "rooms", "--out", str(tmp_path / "no.jsonl")] + argv,
                              cwd=ROOT, capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and said in done.stderr, done.stderr
        assert not (tmp_path / "no.jsonl").exists()


def test_a_cluster_published_through_its_first_broker_only_gives_every_broker_s_viewers_their_rooms(
        tmp_path, redis_installed):
    _, (run,) = rooms(tmp_path, "--servers", "cluster-cpython", "--brokers", "3", "--publish-at", "first",
                      "--rooms", "6", "--viewers", "6", "--idle-rooms", "0")
    assert (run.brokers, run.publish_at) == (3, "first")
    assert_isolated_and_whole(run, 6)
    assert set(run.cpu_s) == {"broker1", "broker2", "broker3", "redis"}
    # What their viewers' rooms cost brokers 2 and 3 here is a few ms, under the clock's 10 ms tick:
    # that they delivered is assert_isolated_and_whole's; that each process's CPU was read, this.
    assert all(seconds >= 0 for seconds in run.cpu_s.values()), run.cpu_s
    assert set(run.idle_cpu) == set(run.cpu_s), "each process's idle share, to subtract"
