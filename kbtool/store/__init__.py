"""Where cards live: the git-backed store, a knowledge base's root, and kb.toml.

Where cards live: the git-backed store (one commit per write), finding a knowledge base's
root, and kb.toml's settings."""
