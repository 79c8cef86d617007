"""The room and its rules, without I/O: fan-out, heartbeats' schedule, limits, origins, drain."""
