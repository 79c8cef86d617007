"""Memory assertions that hold on any machine, whatever PyPy's nursery.

The RSS after a first round of any load also pays for what a broker does
once: buffers and heaps growing to their working size, the JIT's machine
code, and on PyPy the nursery. Its pages count in the RSS from the first
time allocation sweeps through them; and the large objects a broker makes
(its 64 KiB reads, for one) are allocated outside it, malloc'ed, and freed
only at the next minor collection, so the memory they take grows through a
whole nursery period before malloc can reuse it. The nursery's size is the
operator's (``PYPY_GC_NURSERY``), the broker's own, or on an interpreter
started otherwise half the CPU's reported cache: a nursery of hundreds of MB
takes rounds to sweep. So a memory test asserts a plateau:

* Warm-up: its round runs at least ``warm_up`` times, and on PyPy until a
  round has run whole after the broker's second minor collection since the
  first round began (the first: the allocation pointer reached the nursery's
  end, every page of it used; the second: a whole period's large objects
  freed for the next to reuse; then a round in that reused heap: a round that
  allocates a nursery's worth, as a trickle of reads does, can hold both
  collections and still grow the heap in the round after), at most
  MAX_WARM_UP times.
* Then ``measured`` more rounds, equal to the others, and the test bounds the
  growth between them: a leak grows every round, a warm-up only the first.
"""

from loadtest.procstat import rss_kb

MAX_WARM_UP = 40


def minor_collections(broker):
    """The broker's minor collections so far (PyPy), or None (CPython)."""
    return broker.stats()["gc"].get("minor_collections")


def rss_after_rounds(broker, one_round, measured=1, warm_up=1):
    """Warm ``broker`` up with ``one_round()`` (see the rules above), then run
    it ``measured`` more times; the broker's RSS in KiB after the last warm-up
    round and after each measured one."""
    before = minor_collections(broker)
    rounds = 0
    while True:
        collected_twice = before is None or minor_collections(broker) >= before + 2
        one_round()
        rounds += 1
        if rounds >= warm_up and collected_twice:
            break
        assert rounds < MAX_WARM_UP, "not two minor collections in %d rounds: nursery %s" % (
            rounds, broker.stats()["gc"].get("nursery"))
    rss = [rss_kb(broker.server.pid)]
    for _ in range(measured):
        one_round()
        rss.append(rss_kb(broker.server.pid))
    return rss
