"""Agent Skills: the specification's checks and a knowledge base's skill registry.

Agent Skills: the specification's checks (spec) and the skill registry of a knowledge base
(new, import, export, pack)."""
