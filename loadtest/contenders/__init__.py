"""The servers the benchmarks start: how each is launched, pinned and probed, alone or as a cluster with Redis."""
