"""The search daemon: a warm process per knowledge base, and the client that reaches it.

The search daemon: a warm process per knowledge base that answers search and the light reads, and the
client a `kb` command uses to reach it."""
