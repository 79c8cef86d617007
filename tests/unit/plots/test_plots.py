"""Figures and tables from records written by hand."""

import json
import os

import pytest

pytest.importorskip("matplotlib", reason="matplotlib is installed only where it has wheels (CPython)")

from loadtest import records as schema  # noqa: E402
from loadtest.results import summary  # noqa: E402
from plots import __main__ as cli  # noqa: E402
from plots import figures  # noqa: E402


def results_of(lines):
    """The :class:`~loadtest.results.summary.Results` of results lines as a file holds them."""
    return summary.Results([schema.parse_older(line) for line in lines])


def test_realtime_capacity_ignores_slow_and_overloaded_steps():
    step = {"type": "step", "server": "s", "level": 10, "rate": 10, "overloaded": False}
    records = [
        dict(step, server_msgs_per_s=100.0, rtt_ms={"mean": 5.0}),
        dict(step, server_msgs_per_s=300.0, rtt_ms={"mean": 250.0}),
        dict(step, server_msgs_per_s=400.0, rtt_ms={"mean": 20.0}, overloaded=True),
    ]
    (row,) = summary.realtime_capacity(results_of(records))
    assert (row.msgs_per_s, row.ratio, row.limit) == (100.0, None, summary.SERVER)


def test_figures_without_measurements_are_skipped(tmp_path):
    results = results_of([{"type": "run", "started": "2026-01-01T00:00:00+00:00"}])
    written, skipped = figures.write_all(results, str(tmp_path))
    assert written == [] and skipped == [name for name, _ in figures.FIGURES]


def test_rss_over_time_has_a_line_per_soaked_server_and_the_warm_up(soak_records):
    results = results_of(soak_records)
    axes = figures.rss_over_time_figure(results).axes[0]
    lines = {line.get_label(): line for line in axes.get_lines() if not line.get_label().startswith("_")}
    assert sorted(lines) == ["broker-cpython: flat", "broker-pypy: growing"]
    for server, line in (("broker-cpython", lines["broker-cpython: flat"]),
                         ("broker-pypy", lines["broker-pypy: growing"])):
        samples = [s for s in results.soak_samples if s.server == server]
        assert list(line.get_xdata()) == [s.elapsed_s / 60 for s in samples]
        assert list(line.get_ydata()) == [s.server_rss_kb / 1024 for s in samples]
    (warmup,) = [line for line in axes.get_lines() if line.get_label() == "_warmup"]
    assert list(warmup.get_xdata()) == [1.0, 1.0]
    assert axes.get_ylim()[0] == 0
    assert "MB" in axes.get_ylabel() and "minutes" in axes.get_xlabel()
    assert "100 clients x 300 msgs/s" in axes.get_xlabel()


def test_command_draws_the_soak_figure_and_table(soak_records, tmp_path, capsys):
    path = tmp_path / "soak.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in soak_records))
    assert cli.main([str(path)]) == 0
    written = sorted(os.listdir(str(tmp_path / "soak")))
    assert written == ["rss_over_time.png", "rss_over_time.svg", "summary.rst"]
    out, err = capsys.readouterr()
    assert "held load" in out and "no rtt_mean figure" in err
