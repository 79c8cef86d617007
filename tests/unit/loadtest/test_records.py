"""The results schema: every line written, old or new, is a record whose JSON object is kept to the letter."""

import dataclasses
import json
import os

import pytest

from loadtest import records
from checkout import ROOT

REFERENCE = os.path.join(ROOT, "plots", "reference", "results.jsonl")


# The fields each type gained after the reference results were written.
NEWER_FIELDS = {"server": ["tls"], "step": ["transport", "reopened"], "level": ["transport"],
                "cpu_per_msg": ["transport", "reopened", "tls"], "idle_rss": ["transport", "tls"]}


def reference_lines():
    with open(REFERENCE) as f:
        return [json.loads(line) for line in f]


def reference_step():
    """The reference results' first step, as this version writes one (over a websocket, so never reopened)."""
    line = next(line for line in reference_lines() if line["type"] == "step")
    return dataclasses.replace(records.parse_older(line), transport="websocket", reopened=0)


def test_the_committed_reference_results_read_as_records_field_for_field():
    lines = reference_lines()
    assert {line["type"] for line in lines} == {"run", "server", "step", "level", "cpu_per_msg", "idle_rss", "floor"}
    for line in lines:
        read = records.parse_older(line).as_dict()
        newer = NEWER_FIELDS.get(line["type"], [])
        assert [(name, value) for name, value in read.items() if name not in newer] == list(line.items())
        assert [read[name] for name in newer] == [None] * len(newer)


def test_a_line_of_this_version_reads_back_to_the_letter():
    lines = reference_lines()
    now = {"transport": "xhr-streaming", "reopened": 12, "tls": True}
    for kind in ("server", "step", "cpu_per_msg", "idle_rss"):
        line = next(line for line in lines if line["type"] == kind)
        record = dataclasses.replace(records.parse_older(line), **{name: now[name] for name in NEWER_FIELDS[kind]})
        assert list(records.parse(record.as_dict()).as_dict().items()) == list(record.as_dict().items())
        with pytest.raises(TypeError):
            records.parse(line)  # an older line is no record of this version: parse_older reads it


def test_a_fixed_load_record_says_its_transport_and_its_step_s_reopened_streams():
    step = dataclasses.replace(reference_step(), reopened=40)
    fixed = records.CpuPerMsg.of_step(step, "xhr-polling")
    assert list(fixed.as_dict())[:3] == ["type", "server", "transport"]
    assert (fixed.transport, fixed.reopened, fixed.cpu_us_per_msg) == ("xhr-polling", 40, step.server_cpu_us_per_msg)


def test_a_soak_sample_is_its_step_and_the_time_under_load():
    step = reference_step()
    held = {"behind": 0, "unsent_kb": 0, "gc_used_kb": None, "gc_live_kb": None}
    sample = records.SoakSample.of_step(step, 12.5, held).as_dict()
    assert list(sample) == list(step.as_dict()) + ["elapsed_s", "server_held"]
    assert dict(sample, type="step", elapsed_s=None, server_held=None) == dict(
        step.as_dict(), elapsed_s=None, server_held=None)
    assert sample["type"] == "soak_sample" and sample["elapsed_s"] == 12.5 and sample["server_held"] == held


def test_a_soak_sample_written_before_server_held_still_reads():
    old = dict(reference_step().as_dict(), type="soak_sample", elapsed_s=5.0)
    assert records.parse(old).server_held is None


def test_a_line_with_other_fields_is_no_record():
    with pytest.raises(TypeError):
        records.parse({"type": "level", "server": "s", "transport": "websocket", "level": 1, "end": "sweep done",
                       "surprise": 1})
    with pytest.raises(TypeError):
        records.parse({"type": "level", "server": "s", "level": 1})
    with pytest.raises(KeyError):
        records.parse({"type": "nothing"})


def test_records_are_frozen():
    level = records.Level(server="s", transport="websocket", level=1, end="sweep done")
    with pytest.raises(AttributeError):
        level.end = "overloaded"


def test_an_older_line_reads_as_a_record_with_what_it_lacks_as_none():
    line = {"type": "floor", "connections": 10, "rate": 100.0, "sends": 5, "cpu_us_per_send": 2.5,
            "a_field_since_removed": 1}
    floor = records.parse_older(line)
    assert isinstance(floor, records.Floor)
    assert (floor.connections, floor.cpu_us_per_send, floor.blocked) == (10, 2.5, None)
    assert records.parse_older({"type": "a type of a later version"}) is None
    with pytest.raises(TypeError):
        records.parse(line)
