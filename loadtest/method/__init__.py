"""The benchmark method: its rules and verdicts as pure functions, and the sweeps that apply them to a server."""
