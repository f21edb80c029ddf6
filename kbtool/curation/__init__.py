"""Curation: kb lint's checks, review of agent-written cards, and gates.

Lint also finds credentials already committed (committed_secrets.py) and copies whose original changed since
(drift.py). A gate's lock covers what gate_reach.py finds its command runs (gate_lock.py); gates.py runs its
command or its comparison (gate_compare.py), runs/gates/ keeps each run (gate_runs.py), and standing.py says
whether the newest run still judges the candidate as it is now."""
