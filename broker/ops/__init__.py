"""What operators and backends use: the HTTP API, metrics, the demo page, memory policy."""
