"""The load client's I/O: the connections, workers and publisher that drive :mod:`loadtest.framing`."""
