"""The background build of a long-lived process's vectors.

The daemon's and kb serve's: its threads and how far they are, one VectorWarmUp held by each KnowledgeBase
(warm_up); Search.warm_in_background starts it and searches ask it."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kbtool.search.embeddings import Embedder
    from kbtool.store.repository import Store

# how much nicer than the process a background build runs (_yield_to_searches): on 2 busy cores a search during
# the warm-up waited behind it
BUILD_NICENESS = 10
BACKGROUND_GROUP = 32  # chunks the background build embeds and stores at a time: each is searchable at once


class VectorWarmUp:
    """The model and the missing vectors of one knowledge base, built on background threads, and what a search
    asks of them meanwhile: whether they are still building, whether the model is loaded, how far they are."""

    def __init__(self) -> None:
        # a long-lived process (warm_in_background ran: the daemon, kb serve): a backlog of vectors, a source's first
        # of all, is built on a thread, never inside a call; a one-shot command embeds what it searches
        self.long_lived = False
        self.vectors: threading.Thread | None = None  # the model, then the missing vectors (start)
        self.cjk: threading.Thread | None = None  # the multilingual leg's vectors, after MiniLM's
        # (made, to make) of the vectors the background build embeds, None until its first group
        self.made: tuple[int, int] | None = None
        # whether the background build has the model loaded: from then on a hybrid search ranks by both legs over
        # the vectors there are (its own keyword hits embedded first), saying how many, instead of by keywords alone
        self.model_ready = False
        # cleared while a source's keyword rows are read on a thread (Search.warm_sources): a search meanwhile leaves
        # this knowledge base out and says so, any other read of it waits (KnowledgeBaseCore.source_bases)
        self.rows_ready = threading.Event()
        self.rows_ready.set()

    def warming(self) -> bool:
        """Whether the model and the missing vectors are still loading in the background."""
        return self.vectors is not None and self.vectors.is_alive()

    def cjk_warming(self) -> bool:
        """Whether the multilingual leg's vectors are still being built in the background."""
        return self.cjk is not None and self.cjk.is_alive()

    def join(self, timeout: float | None = None) -> None:
        """Wait until the model is loaded and the missing vectors are stored (or timeout seconds)."""
        if self.vectors is not None:
            self.vectors.join(timeout)

    def how_far(self) -> str:
        """How far the background build is: the missing vectors made of those to make, once the first group
        is stored (the model loads before it)."""
        if self.made is None:
            return "the embedding model is loading"
        done, total = self.made
        if done >= total:
            return f"{total:,} missing vectors made; the model is finishing its warm-up"
        return f"{done:,} of {total:,} missing vectors made"

    def start(
        self,
        store: Store,
        notices: list[str],
        embedder: Embedder,
        cjk: Embedder | None,
        report: Callable[[str], None] | None = None,
    ) -> None:
        """The model loaded and the missing vectors embedded on a thread (kb-vectors), newest cards first, then
        the multilingual leg's (kb-cjk-vectors) where there is one; a failure is said in notices. report: told
        how long the model and the vectors took (the daemon's log)."""
        from kbtool.search.index import Index
        from kbtool.search.multilingual import in_cjk_leg
        from kbtool.search.translation import in_chinese

        tell = report or (lambda message: None)

        def build() -> None:
            _yield_to_searches()
            try:
                started = time.perf_counter()
                # decides the runtime (onnxruntime, or PyTorch where its export is missing and cannot be made)
                # and loads the model; the first query then embeds at once
                embedder.prepare_for_queries()
                embedder.embed_query("warm up")
                self.model_ready = True
                loaded = time.perf_counter()
                runtime = getattr(embedder, "runtime", None) or embedder.model_id
                tell(f"embedding model loaded in {loaded - started:.1f} s ({runtime})")
                made = Index(store).embed_missing(embedder, progress, group_size=BACKGROUND_GROUP, drafts=True)
                whole = time.perf_counter() - loaded
                first = (every_chunk[0] - loaded) if every_chunk else whole  # drafts included
                tell(
                    f"{made:,} vectors embedded in {first:.1f} s ({made / first if first else 0:.1f} chunks/s), "
                    f"every one whole at {whole:.1f} s"
                )
            except Exception as exc:
                notices.append(f"building the vectors in the background failed ({exc}); the next search builds them")
                return
            # hybrid search is ready now; the Chinese chunks' multilingual vectors come after (a knowledge base
            # without Chinese loads no model for them)
            if cjk is not None:
                self.cjk = threading.Thread(target=build_cjk, name="kb-cjk-vectors", daemon=True)
                self.cjk.start()

        def build_cjk() -> None:
            assert cjk is not None
            _yield_to_searches()
            try:
                index = Index(store)
                index.embed_missing(cjk, only=in_cjk_leg)
                if index.stores_vectors(cjk.model_id):  # Chinese here: the first English query waits for neither
                    cjk.prepare_for_queries()
                    in_chinese(["warm"])
            except Exception as exc:
                notices.append(f"building the multilingual vectors failed ({exc}); the next search builds them")

        every_chunk: list[float] = []  # when every chunk had a vector, drafts included

        def progress(done: int, total: int) -> None:
            self.made = (done, total)
            if done == total:
                every_chunk.append(time.perf_counter())

        self.vectors = threading.Thread(target=build, name="kb-vectors", daemon=True)
        self.vectors.start()


def _yield_to_searches() -> None:
    """A background build's thread (and the threads it starts, which inherit it) runs at a lower priority
    than the searches the process answers meanwhile, which then get the CPU first when both cores are busy
    (Linux: a thread's niceness is its own). Elsewhere, or if refused, it runs as it is."""
    with contextlib.suppress(AttributeError, OSError):
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(os.getpriority(os.PRIO_PROCESS, thread) + BUILD_NICENESS, 19))
