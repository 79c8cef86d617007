"""Figures from loadtest results files, with the summary tables beside them (``python -m plots RESULTS.jsonl``)."""
