"""Curation: kb lint's checks, review of agent-written cards, and gates.

Curation: kb lint's checks, review of agent-written cards, credentials in history, and gates (locks,
runs, comparisons)."""
