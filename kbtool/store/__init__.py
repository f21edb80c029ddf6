"""Where cards live: the git-backed store, a knowledge base's root, and kb.toml.

Each write is one commit, so git holds the truth and its history; the index (kbtool.search) is a cache of it.
Around the store: finding a knowledge base's root, kb.toml's settings, the commit messages and the history read
back from them, sources, sync with a team's remote, import and export, and the guards of a write (credentials
stopped before a commit, files written whole, interrupts held off at the moments that must not be cut)."""
