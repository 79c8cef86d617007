"""What operators and backends use: the HTTP API, metrics, the demo page, the log's rate, memory policy, PyPy's JIT and nursery."""
