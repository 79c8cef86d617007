"""The line a person reads when a feed ends: what it published, how fast, and what each publish and delivery cost."""

from loadtest import records
from loadtest.results import console

TIMES = {"mean": 1.0, "p50": 0.8, "p95": 2.0, "p99": 4.0, "max": 9.0}
UNTIMED = dict.fromkeys(TIMES)


def feed(**changes):
    fields = dict(server="cluster-cpython", brokers=3, clients=100, connected=100, connect_s=1.0, rate=100000.0,
                  duration_s=10.0, published=5000, received=500000, short=0, extra=0, dropped=0, drop_reasons={},
                  delivery_ms=UNTIMED, connected_rss_kb={}, final_rss_kb={}, end="completed", publish="counter",
                  publish_ms=TIMES, cpu_s={"broker1": 2.0, "broker2": 1.5, "broker3": 1.5, "redis": 0.5},
                  counter_totals={"broker1": "5000", "broker2": "5000", "broker3": "5000"})
    fields.update(changes)
    return records.Feed(**fields)


def test_a_counter_feed_gives_its_rate_answers_and_cpu_per_add_and_per_delivery():
    assert console.feed_verdict_line(feed()) == (
        "cluster-cpython x3 counter: 100 listeners, 5000 published (500/s, answered p50 0.8 p99 4.0 ms), "
        "delivered p50 - p99 - max - ms; CPU us per publish: brokers 1000.0, redis 100.0, per delivery 10.0; "
        "counter totals 5000,5000,5000; 0 missing, 0 twice, 0 dropped (completed)")


def test_a_broker_alone_has_no_redis_and_a_plain_feed_no_totals():
    line = console.feed_verdict_line(feed(brokers=1, publish="plain", cpu_s={"broker1": 1.0}, counter_totals={},
                                          delivery_ms=TIMES))
    assert "x1 plain" in line and "brokers 200.0, redis -, per delivery 2.0; 0 missing" in line
