"""The experiment loop and curation: evidence and benchmark formats, finding input, gates,
review of agent-written cards, importing documents, and kb lint's checks."""
