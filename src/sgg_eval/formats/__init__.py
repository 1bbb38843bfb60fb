"""Readers for the formats researchers have: torch files, eval_results.pytorch, SGBench JSON."""
