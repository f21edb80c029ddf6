"""Measured evidence: values, benchmark formats, runs, repeats, statistics and provenance.

Measured evidence: metric values, the benchmark formats and their readers, runs, repeats, statistics,
loads and pairing, plots, and a run's provenance and environment."""
