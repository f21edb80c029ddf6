"""The search daemon: a warm process per knowledge base, and the client that reaches it.

The daemon (server.py) answers search and the light reads (list, gaps, stats: operations.py defines them once
for both paths). A `kb` command reaches it through client.py, which starts one for a search (the other reads
use one only when it runs) and, with none, reads in its own process; peers.py keeps the socket this user's
alone. search_command.py reads a plain `kb search` from its command line and asks the daemon without loading
the CLI."""
