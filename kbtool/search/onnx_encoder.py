"""Documents and queries embedded through onnxruntime, with no PyTorch in the process.

The daemon used to hold two runtimes of one model: PyTorch (sentence-transformers) for documents and
onnxruntime for queries, 829 MiB RSS on the starter KB. Here the ONNX export of the model's transformer
does both: tokenised by `tokenizers` from the model folder's tokenizer.json, mean-pooled over the
attention mask and L2-normalised, as the folder's sentence-transformers pipeline (modules.json,
1_Pooling) does. torch is needed only to make the export, which a short-lived child process does
(kbtool/search/onnx_export.py) so its memory leaves with it.

The export (~90 MB) is made once per model and cached under $KB_CACHE_DIR (default ~/.cache/kbtool)
beside PyTorch's fp32 vectors of probe texts; a process uses the export only if its own vectors of
those probes agree with PyTorch's (cosine >= 0.9999 on every one), else it stays on PyTorch.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.store.locate import cache_dir

if TYPE_CHECKING:
    import numpy as np

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
AGREEMENT = 0.9999  # minimum cosine with PyTorch's fp32 vector on every probe
BATCH = 16  # texts a run at most: padded to the longest of its batch, after sorting by length
# word pieces a run at most (texts x the longest): onnxruntime's arena keeps the memory of the largest run
# for the life of the process. Embedding the starter KB's chunks (2 runs side by side) the process settled
# at 279 MiB with 1 text a run, 319 with 2, 381 with 4, 844 with 16; 324 with this budget, 385 with 1024
TOKENS_PER_RUN = 512
EXPORT_TIMEOUT_S = 600
# short and long, English and Chinese: a long text is truncated at max_seq_length and pads the short ones in
# its batch, so a mistake in truncation, padding or the mask shows here
PROBES = (
    "NVFP4 MoE decode throughput on B200",
    "why does the all-reduce hang after the first step",
    "KV 缓存 量化 精度",
    " ".join(["the prefill of a long prompt is chunked so decode steps of other requests are not stalled"] * 30),
)


class OnnxEncoder:
    """Mean-pooled, L2-normalised sentence vectors from an ONNX export of a model's transformer."""

    def __init__(self, session: Any, tokenizer: Any, threads: int):
        self.session, self.tokenizer, self.threads = session, tokenizer, threads
        self.inputs = [i.name for i in session.get_inputs()]

    def encode(self, text: str) -> np.ndarray:
        vector: np.ndarray = self.encode_many([text])[0]
        return vector

    def encode_many(self, texts: Sequence[str]) -> np.ndarray:
        """Sorted by length so a batch pads little; batches run side by side, one core each."""
        return self._encode(self.tokenizer.encode_batch(list(texts)))

    def encode_drafts(self, texts: Sequence[str], pieces: int) -> tuple[np.ndarray, list[bool]]:
        """Vectors of the texts cut at `pieces` word pieces (special tokens included), and which of them were
        longer: theirs are drafts, the others are the vectors encode_many makes."""
        encodings = self.tokenizer.encode_batch(list(texts))
        cut = [len(e.ids) > pieces for e in encodings]
        drafts = [_Pieces.first(e, pieces) if longer else e for e, longer in zip(encodings, cut, strict=True)]
        return self._encode(drafts), cut

    def _encode(self, encodings: list[Any]) -> np.ndarray:
        import numpy as np

        batches = _batches(sorted(range(len(encodings)), key=lambda i: len(encodings[i].ids)), encodings)
        if not batches:
            return np.zeros((0, 0), dtype=np.float32)
        if len(batches) == 1:
            parts = [self._batch([encodings[i] for i in batches[0]])]
        else:
            with ThreadPoolExecutor(max_workers=self.threads) as pool:  # run() releases the GIL
                parts = list(pool.map(lambda batch: self._batch([encodings[i] for i in batch]), batches))
        out = np.zeros((len(encodings), parts[0].shape[1]), dtype=np.float32)
        for batch, vectors in zip(batches, parts, strict=True):
            out[batch] = vectors
        return out

    def _batch(self, encodings: list[Any]) -> np.ndarray:
        import numpy as np

        width = max(len(e.ids) for e in encodings)
        arrays = {name: np.zeros((len(encodings), width), dtype=np.int64) for name in INPUTS}
        for row, e in enumerate(encodings):
            n = len(e.ids)
            arrays["input_ids"][row, :n] = e.ids
            arrays["attention_mask"][row, :n] = e.attention_mask
            arrays["token_type_ids"][row, :n] = e.type_ids
        hidden: np.ndarray = self.session.run(None, {name: arrays[name] for name in self.inputs})[0]
        mask = arrays["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
        unit: np.ndarray = pooled / np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
        return unit.astype(np.float32)


class _Pieces:
    """An encoding's first word pieces, ending with its closing special token, as the tokenizer's own
    truncation at that length makes them ([CLS], the text's first pieces, [SEP])."""

    def __init__(self, ids: list[int], attention_mask: list[int], type_ids: list[int]):
        self.ids, self.attention_mask, self.type_ids = ids, attention_mask, type_ids

    @classmethod
    def first(cls, encoding: Any, pieces: int) -> _Pieces:
        ids = [*encoding.ids[: pieces - 1], encoding.ids[-1]]
        return cls(ids, encoding.attention_mask[:pieces], encoding.type_ids[:pieces])


def _batches(order: list[int], encodings: list[Any]) -> list[list[int]]:
    """Consecutive texts of the length order, as many a batch as BATCH and TOKENS_PER_RUN allow."""
    batches: list[list[int]] = []
    for i in order:  # ascending length: the text added is the longest of its batch
        if batches and len(batches[-1]) < BATCH and (len(batches[-1]) + 1) * len(encodings[i].ids) <= TOKENS_PER_RUN:
            batches[-1].append(i)
        else:
            batches.append([i])
    return batches


def mean_pooled_pipeline(model_path: str) -> tuple[int, int] | None:
    """(dimension, max_seq_length) when the folder's pipeline is transformer, mean pooling, normalisation
    (what OnnxEncoder reproduces), read from its files without loading it; None otherwise."""
    folder = Path(model_path)
    try:
        modules = json.loads((folder / "modules.json").read_text())
        kinds = [m["type"].rsplit(".", 1)[-1] for m in modules]
        pooling = json.loads((folder / modules[1]["path"] / "config.json").read_text())
        settings = json.loads((folder / "sentence_bert_config.json").read_text())
    except (OSError, ValueError, KeyError, IndexError, TypeError, AttributeError):
        return None
    modes = [key for key, on in pooling.items() if key.startswith("pooling_mode") and on]
    if kinds != ["Transformer", "Pooling", "Normalize"] or modes != ["pooling_mode_mean_tokens"]:
        return None
    if settings.get("do_lower_case") or not (folder / "tokenizer.json").is_file():
        return None
    return int(pooling["word_embedding_dimension"]), int(settings["max_seq_length"])


def usable() -> bool:
    """Whether onnxruntime and tokenizers are installed, found without importing them."""
    return all(_installed(name) for name in ("onnxruntime", "tokenizers"))


def open_encoder(model_path: str, make: bool = True) -> OnnxEncoder | None:
    """An encoder for the model in model_path that agrees with PyTorch, or None (then stay on PyTorch).
    With make, a missing export is made in a child process (seconds, once per model)."""
    pipeline = mean_pooled_pipeline(model_path)
    if pipeline is None or not usable():
        return None
    onnx_path, reference_path = export_paths(model_path)
    cached = onnx_path.exists() and reference_path.exists()
    if not cached and not (make and _installed("onnx") and _export_in_child(model_path)):
        return None
    import numpy as np

    try:
        reference = np.load(reference_path)
        encoder = _load(onnx_path, model_path, pipeline[1])
        probed = encoder.encode_many(PROBES)
    except Exception:  # a damaged cache file, or an export this onnxruntime cannot run: stay on PyTorch
        return None
    if reference.shape != probed.shape or float((reference * probed).sum(1).min()) < AGREEMENT:
        return None
    return encoder


def _load(onnx_path: Path, model_path: str, max_length: int) -> OnnxEncoder:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(Path(model_path) / "tokenizer.json"))
    tokenizer.enable_truncation(max_length)
    tokenizer.no_padding()  # each batch is padded to its own longest text, in OnnxEncoder._batch
    options = ort.SessionOptions()
    # one thread a run: a query leaves the other core to the BM25 leg (two threads fighting it doubled the
    # warm hybrid query at 10k cards, 9.7-10.7 ms against 18.8-21.5 ms); documents use every core by
    # running one batch a core side by side
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its warnings would land on the user's stderr
    session = ort.InferenceSession(str(onnx_path), options, providers=["CPUExecutionProvider"])
    return OnnxEncoder(session, tokenizer, threads=os.cpu_count() or 1)


def export_paths(model_path: str) -> tuple[Path, Path]:
    """Where the export of this model and PyTorch's vectors of the probes are cached."""
    key = weights_key(model_path)
    folder = cache_dir() / "onnx"
    return folder / f"{key}.onnx", folder / f"{key}.probes.npy"


def _export_in_child(model_path: str) -> bool:
    """Made by `python -m kbtool.search.onnx_export`: torch's few hundred MB leave with the child."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "kbtool.search.onnx_export", model_path],
            env=env,
            capture_output=True,
            timeout=EXPORT_TIMEOUT_S,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def weights_key(model_path: str) -> str:
    """Names the export after what it was made from: each model file's name and content, torch's version
    (read from its metadata: importing torch is what this module avoids) and the probes. By content, not
    mtime: every fresh install (a new clone's .venv) writes the same model files anew, and must find the
    export another install made rather than pay seconds of torch again."""
    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "no torch"
    digest = hashlib.sha256(torch_version.encode())
    digest.update("\n".join(PROBES).encode())
    memo_path = cache_dir() / "model-content.json"  # beside onnx/, which only an export creates
    memo = _read_memo(memo_path)
    fresh: dict[str, str] = {}
    for file in sorted(Path(model_path).rglob("*")):
        if file.is_file():
            st = file.stat()
            stamp = f"{file.resolve()}:{st.st_size}:{st.st_mtime_ns}"
            content = memo.get(stamp)
            if content is None:  # hashed once per install: ~0.2 s for the 90 MB of weights
                with open(file, "rb") as handle:
                    content = fresh[stamp] = hashlib.file_digest(handle, "sha256").hexdigest()
            digest.update(f"{file.relative_to(model_path)}:{content}\n".encode())
    if fresh:
        _write_memo(memo_path, {**memo, **fresh})
    return digest.hexdigest()[:24]


MEMO_ENTRIES = 512  # files' content hashes remembered, by path, size and mtime; the oldest go first


def _read_memo(path: Path) -> dict[str, str]:
    try:
        memo = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return (
        {k: v for k, v in memo.items() if isinstance(k, str) and isinstance(v, str)} if isinstance(memo, dict) else {}
    )


def _write_memo(path: Path, memo: dict[str, str]) -> None:
    """Whole or not at all (a rename); a cache that cannot be written only costs the hashing next time."""
    kept = dict(list(memo.items())[-MEMO_ENTRIES:])
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(kept))
        os.replace(tmp, path)
    except OSError:
        return


def _installed(module: str) -> bool:
    try:
        return find_spec(module) is not None
    except (ImportError, ValueError):
        return False
