"""The rooms figure and table, from a results file written by hand: CPU per delivery and p99 against rooms."""

import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from loadtest import records  # noqa: E402
from loadtest.results import files, summary  # noqa: E402
from plots import __main__ as cli  # noqa: E402
from plots import figures  # noqa: E402


def rooms_run(rooms, cpu_us, p99_ms, rooms_per_viewer=1):
    """A run of ``rooms`` rooms x 1000 viewers at 1 msg/s a room, its CPU per delivery and p99."""
    rtt = {"mean": 2.0, "p50": 1.5, "p95": 3.0, "p99": p99_ms, "max": 9.0}
    return records.ManyRooms(
        server="broker-cpython", brokers=1, publish_at="each", transport="websocket", rooms=rooms, viewers=1000,
        rooms_per_viewer=rooms_per_viewer, skew="hot:0.5", hot_viewers=500, room_rate=1.0, rate=float(rooms),
        duration_s=10.0, published=rooms * 10, received=10000, deliveries_per_s=1000.0, foreign=0, short=0, extra=0,
        dropped=0, drop_reasons={}, connections=1000, rtt_ms=rtt, hot_rtt_ms=rtt, tail_rtt_ms=rtt,
        cpu_us_per_delivery=cpu_us, server_cpu=0.1, cpu_s={"broker1": 1.0},
        cpu_window_s=12.0, idle_cpu={"broker1": 0.01}, idle_rooms=100, rss_start_kb=30000, rss_idle_kb=30500,
        rss_per_idle_room_kb=5.0, rss_joined_kb=60000, rss_per_joined_room_kb=29.5, rss_end_kb=61000,
        end="completed")


@pytest.fixture
def results_path(tmp_path):
    path = tmp_path / "rooms.jsonl"
    with files.ResultsFile(str(path)) as out:
        out.write(files.run_record(None, "websocket"))
        for rooms, cpu_us, p99_ms in ((1000, 12.0, 40.0), (1, 9.0, 20.0), (10, 9.5, 22.0)):
            out.write(rooms_run(rooms, cpu_us, p99_ms))
        out.write(rooms_run(10, 8.0, 25.0, rooms_per_viewer=5))
    return path


def test_each_load_is_a_line_of_cpu_per_delivery_and_of_p99_against_rooms_on_a_log_scale(results_path):
    figure = figures.rooms_figure(summary.Results(files.read(str(results_path))))
    cpu, late = figure.axes
    lines = {line.get_label(): line for line in cpu.get_lines()}
    one_room = "broker-cpython over websocket, 1,000 viewers x 1 room, hot:0.5, 1 msgs/s a room"
    assert sorted(lines) == [one_room, "broker-cpython over websocket, 1,000 viewers x 5 rooms, hot:0.5, 1 msgs/s a room"]
    assert list(lines[one_room].get_xdata()) == [1, 10, 1000] and list(lines[one_room].get_ydata()) == [9.0, 9.5, 12.0]
    p99 = {line.get_label(): line for line in late.get_lines()}
    assert list(p99[one_room].get_ydata()) == [20.0, 22.0, 40.0]
    assert cpu.get_xscale() == late.get_xscale() == "log"
    (legend,) = figure.legends  # below the panels, which keep the width for themselves and the subtitle
    assert sorted(text.get_text() for text in legend.get_texts()) == sorted(lines) and cpu.get_legend() is None


def test_the_command_draws_the_figure_says_what_it_drew_and_tables_each_run(results_path, tmp_path, capsys):
    assert cli.main([str(results_path), "-o", str(tmp_path / "figures")]) == 0
    assert sorted(os.listdir(str(tmp_path / "figures"))) == ["rooms.png", "rooms.svg", "summary.rst"]
    out, err = capsys.readouterr()
    assert "rooms: CPU per delivery and round-trip p99 against the number of rooms (1,10,1000), 2 loads" in err
    rows = [line.split() for line in out.splitlines() if line.startswith("broker-cpython")]
    assert [row[2] for row in rows] == ["1000", "1", "10", "10"] and all(row[-3:] == ["0", "0", "0"] for row in rows)


def test_results_without_rooms_draw_no_rooms_figure(tmp_path):
    path = tmp_path / "empty.jsonl"
    with files.ResultsFile(str(path)) as out:
        out.write(files.run_record(None, "websocket"))
    assert figures.rooms_figure(summary.Results(files.read(str(path)))) is None
