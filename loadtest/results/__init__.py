"""Results: the typed records of a results file, reading and writing them, summaries, and what the console shows."""
