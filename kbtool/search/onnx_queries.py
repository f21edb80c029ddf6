"""Query embeddings through onnxruntime: the same weights, about four times faster for one short text.

On 2 CPU cores PyTorch spends ~15 ms in its matrix kernels on a 10-word query (small matrices
are its weak spot); onnxruntime runs the same exported graph in ~4 ms. Documents stay on
PyTorch, which is as fast or faster at batch (bench/bench_embedding_backends.py).

Only a long-lived process (the search daemon, `kb serve`) sets this up, on its background
thread: the export takes ~3 s and ~90 MB on disk, made once per model and cached under
$KB_CACHE_DIR (default ~/.cache/kbtool). The encoder is used only if its vectors agree with
PyTorch's on probe queries; anything missing or different leaves queries on PyTorch.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.store.locate import cache_dir

if TYPE_CHECKING:
    import numpy as np

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
AGREEMENT = 0.9999  # minimum cosine with PyTorch's vector on every probe
PROBES = (
    "NVFP4 MoE decode throughput on B200",
    "why does the all-reduce hang after the first step",
    "KV 缓存 量化 精度",
)


class OnnxQueryEncoder:
    """Mean-pooled, L2-normalised sentence vectors from an ONNX export of a model's transformer."""

    def __init__(self, session: Any, tokenizer: Any, max_length: int):
        self.session, self.tokenizer, self.max_length = session, tokenizer, max_length
        self.inputs = [i.name for i in session.get_inputs()]

    def encode(self, text: str) -> np.ndarray:
        import numpy as np

        enc = self.tokenizer([text], truncation=True, max_length=self.max_length, return_tensors="np")
        hidden: np.ndarray = self.session.run(None, {name: enc[name].astype(np.int64) for name in self.inputs})[0]
        mask = enc["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
        unit: np.ndarray = (pooled / np.linalg.norm(pooled, axis=1, keepdims=True))[0]
        return unit.astype(np.float32)


def query_encoder(model: Any, model_path: str) -> OnnxQueryEncoder | None:
    """An encoder for `model` (a loaded SentenceTransformer) that agrees with it, or None."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    if not _mean_pooled(model):
        return None
    path = _exported(model, model_path)
    if path is None:
        return None
    options = ort.SessionOptions()
    # one thread: the BM25 leg runs on the other core meanwhile; two threads fighting it for the cores
    # doubled the warm hybrid query at 10k cards (9.7-10.7 ms with one, 18.8-21.5 ms with two)
    options.intra_op_num_threads = 1
    options.log_severity_level = 3  # errors only: its warnings would land on the user's stderr
    encoder = OnnxQueryEncoder(
        ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"]),
        model.tokenizer,
        model.max_seq_length,
    )
    reference = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    agree = all(float(encoder.encode(text) @ ref) >= AGREEMENT for text, ref in zip(PROBES, reference, strict=True))
    return encoder if agree else None


def _mean_pooled(model: Any) -> bool:
    """Transformer, mean pooling, normalisation: the pipeline `encode` above reproduces."""
    names = [type(module).__name__ for module in model]
    if names != ["Transformer", "Pooling", "Normalize"]:
        return False
    config = model[1].get_config_dict()
    return config.get("pooling_mode") == "mean" and set(model.tokenizer.model_input_names) <= set(INPUTS)


def _exported(model: Any, model_path: str) -> Path | None:
    """The cached export of this model's weights for this torch version, made if missing."""
    import torch
    from filelock import FileLock

    folder = cache_dir() / "onnx"
    path = folder / f"{_weights_key(model_path, torch.__version__)}.onnx"
    if path.exists():
        return path
    try:
        import onnx  # noqa: F401 - torch's exporter needs it; without it, stay on PyTorch
    except ImportError:
        return None
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(path) + ".lock"):
        if path.exists():  # another process exported it while this one waited
            return path
        _export(model, folder, path)
    return path


def _export(model: Any, folder: Path, path: Path) -> None:
    import copy
    import warnings

    import torch

    # a copy: tracing must not share the module with searches embedding on another thread meanwhile
    transformer = copy.deepcopy(model[0].auto_model).eval()
    names = list(model.tokenizer.model_input_names)

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            last: torch.Tensor = self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state
            return last

    sample = model.tokenizer(["a sample query", "b"], padding=True, return_tensors="pt")
    handle, tmp = tempfile.mkstemp(dir=folder, suffix=".onnx.tmp")
    os.close(handle)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the exporter's tracer warnings are about its internals
            torch.onnx.export(
                LastHidden(),
                tuple(sample[n] for n in names),
                tmp,
                input_names=names,
                output_names=["hidden"],
                opset_version=17,
                dynamo=False,
                dynamic_axes={n: {0: "batch", 1: "tokens"} for n in [*names, "hidden"]},
            )
        os.replace(tmp, path)  # whole or absent: a reader never sees half an export
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def _weights_key(model_path: str, torch_version: str) -> str:
    """Names the export after what it was made from: each model file's name, size and mtime, and torch."""
    digest = hashlib.sha256(torch_version.encode())
    for file in sorted(Path(model_path).rglob("*")):
        if file.is_file():
            st = file.stat()
            digest.update(f"{file.relative_to(model_path)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:24]
