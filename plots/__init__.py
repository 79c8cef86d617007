"""Figures and summary tables from loadtest results files (``python -m plots RESULTS.jsonl``)."""
