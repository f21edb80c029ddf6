"""An embedder whose model takes seconds to load, as all-MiniLM-L6-v2's does (8-11 s after a start, 53 s
under load), so that a test can tell an answer that waited for it from one that did not, every time.

In a test's own process: SlowToLoad(seconds). For `kb` in a subprocess: run this file as the program,
`python tests/slow_model.py SECONDS kb-arguments...`; every knowledge base it opens gets the slow model.
"""

from __future__ import annotations

import runpy
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from kbtool.search import embeddings


class SlowToLoad(embeddings.HashingEmbedder):
    """The hashing embedder's vectors, after a load of `seconds` on the first text it embeds (once, for every
    thread that asks meanwhile, as SentenceTransformerEmbedder loads its model under a lock)."""

    def __init__(self, seconds: float):
        super().__init__()
        self.seconds = seconds
        self.loads = 0
        self._loading = threading.Lock()
        self._loaded = False

    def _load(self) -> None:
        with self._loading:
            if not self._loaded:
                self.loads += 1
                time.sleep(self.seconds)
                self._loaded = True

    def embed_documents(self, texts: Sequence[str]) -> Any:
        self._load()
        return super().embed_documents(texts)

    def embed_query(self, text: str) -> Any:
        self._load()
        return super().embed_query(text)


if __name__ == "__main__":
    seconds = float(sys.argv.pop(1))
    model = SlowToLoad(seconds)
    embeddings.make_embedder = lambda name, base=None: model  # type: ignore[assignment]  # what kb.toml names
    sys.argv[0] = "kb"
    runpy.run_module("kbtool", run_name="__main__")
