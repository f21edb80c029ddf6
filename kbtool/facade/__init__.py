"""The KnowledgeBase facade: a core, parts each built on it alone, and the class composing them.

The KnowledgeBase facade, a part a module, each built on the core alone: core (open, read and write
cards, the index, sources, the environment), imports, review, gates, findings, search, skills, sources and
curation; knowledge_base.KnowledgeBase composes them. new_project makes a project from a knowledge base."""
