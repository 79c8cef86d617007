"""Where a run's processes go, as a typed value: how many client processes, and the CPUs it refuses."""

import dataclasses

import pytest

from loadtest.contenders import placement


@pytest.mark.parametrize("procs, connections, expected", [
    (None, 1, 1),
    (None, placement.CONNECTIONS_PER_PROC, 1),
    (None, placement.CONNECTIONS_PER_PROC + 1, 2),
    (None, 19000, 2),
    (3, 1, 3),
    (3, 100000, 3),
])
def test_client_processes_are_as_given_or_one_per_share_of_connections(procs, connections, expected):
    assert placement.Placement((0,), (1,), procs).client_procs(connections) == expected


@pytest.mark.parametrize("server_cpus, client_cpus, refusal", [
    ((0,), (1,), None),
    ((0, 2), (1, 3), None),
    ((7,), (1,), "--server-cpu 7: this process may run on CPUs 0,1,2,3 only"),
    ((0,), (9,), "--client-cpu 9: this process may run on CPUs 0,1,2,3 only"),
    ((0, 8), (1,), "--server-cpu 8: this process may run on CPUs 0,1,2,3 only"),
    ((2,), (2,), "--server-cpu and --client-cpu must differ"),
    ((0, 1), (1, 3), "--server-cpu and --client-cpu must differ"),
])
def test_a_placement_is_refused_off_the_cpus_available_or_sharing_one(server_cpus, client_cpus, refusal):
    assert placement.Placement(server_cpus, client_cpus).refusal({3, 1, 2, 0}) == refusal


def test_a_cpu_missing_is_named_before_cpus_shared():
    assert placement.Placement((5,), (5,)).refusal({0, 1}) == "--server-cpu 5: this process may run on CPUs 0,1 only"


def test_placements_and_broker_runs_are_frozen_values():
    where = placement.Placement((0,), (1,))
    runs = placement.BrokerRuns(("broker-cpython",), 2, where, None, ("python", "-m", "loadtest", "feed"))
    assert runs == placement.BrokerRuns(("broker-cpython",), 2, placement.Placement((0,), (1,), None), None,
                                        ("python", "-m", "loadtest", "feed"))
    hash(runs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        runs.out = "elsewhere.jsonl"
