"""The drain's schedule without sockets or clocks: clients closed evenly over the period."""

import pytest

from broker.core.drain import MAX_STRETCH, Drain


def test_nothing_drains_before_a_request_and_the_first_starts_it():
    woken = []
    drain = Drain(10, wake=lambda: woken.append(True))
    assert not drain.draining
    drain.request()
    assert drain.draining and woken == [True]
    drain.request()
    assert drain.requests == 2 and woken == [True, True]


def test_clients_are_closed_evenly_over_the_period():
    drain = Drain(10)
    drain.request()
    drain.start(range(100), now=50.0)
    assert drain.due(50.0) == []
    assert drain.due(51.0) == list(range(10))
    assert drain.due(51.0) == []
    assert drain.due(55.05) == list(range(10, 51))
    assert not drain.done
    assert drain.due(60.0) == list(range(51, 100))
    assert drain.done and drain.due(70.0) == []
    assert drain.stats() == {"draining": True, "seconds": 10, "period": 10, "closed": 100, "clients": 100,
                             "refused": 0}


def test_a_zero_period_closes_everyone_at_once():
    drain = Drain(0)
    drain.start(["a", "b"], now=1.0)
    assert drain.due(1.0) == ["a", "b"] and drain.done


def test_no_clients_is_done_at_once():
    drain = Drain(10)
    drain.start([], now=0.0)
    assert drain.done


@pytest.mark.parametrize("share", [None, 0, 100, 250.0])
def test_a_broker_alone_or_within_its_share_drains_over_its_seconds(share):
    drain = Drain(10)
    drain.start(range(100), now=0.0, share=share)
    assert drain.period == 10
    assert len(drain.due(5.0)) == 50


def test_a_broker_over_its_share_closes_at_the_rate_of_its_share():
    drain = Drain(10)
    drain.start(range(3000), now=0.0, share=2000)  # 200 a second, as a broker holding 2,000 would
    assert drain.period == 15
    assert len(drain.due(1.0)) == 200
    assert len(drain.due(10.0)) == 1800 and not drain.done
    assert len(drain.due(15.0)) == 1000 and drain.done


def test_a_drain_stretches_to_twice_its_seconds_at_most():
    drain = Drain(10)
    drain.start(range(11000), now=0.0, share=5000)
    assert drain.period == 10 * MAX_STRETCH == 20
    assert drain.stats()["period"] == 20
