"""Indexing throughput of embedding backends on the starter KB's own chunks, and how far each
one's vectors agree with the reference (sentence-transformers, PyTorch fp32, batch 32).

    .venv/bin/python bench/bench_embedding_backends.py

Backends: PyTorch fp32 at several batch sizes, PyTorch bfloat16 (autocast, as kb embeds documents
where the CPU multiplies bf16 natively, and bf16 weights), PyTorch dynamic int8 (Linear layers), and, when
onnxruntime is installed, the model exported to ONNX (fp32, and dynamic int8). The export is
made here from the packaged weights; nothing is downloaded. Agreement is the cosine between a
text's vector and its reference vector (1.0 = the same).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def chunk_texts() -> list[str]:
    import kbtool

    kb = kbtool.open(REPO)
    kb.refresh_index(semantic=False)
    return [row[0] for row in kb.index.db.execute("SELECT text FROM chunks ORDER BY id")]


def timed(encode, texts: list[str], reps: int = 2) -> tuple[float, np.ndarray]:
    best, vectors = float("inf"), None
    for _ in range(reps):
        started = time.perf_counter()
        vectors = encode(texts)
        best = min(best, time.perf_counter() - started)
    return len(texts) / best, vectors


def onnx_encoder(model_path: str, quantized: bool, folder: Path):
    import onnxruntime as ort
    import torch
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_path)
    model = AutoModel.from_pretrained(model_path).eval()

    class Hidden(torch.nn.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.inner(
                input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
            ).last_hidden_state

    names = ["input_ids", "attention_mask", "token_type_ids"]
    sample = tokenizer(["a b", "c"], padding=True, return_tensors="pt")
    path = folder / "model.onnx"
    torch.onnx.export(
        Hidden(model),
        tuple(sample[n] for n in names),
        str(path),
        input_names=names,
        output_names=["hidden"],
        dynamic_axes={n: {0: "b", 1: "s"} for n in [*names, "hidden"]},
        opset_version=17,
        dynamo=False,
    )
    if quantized:
        from onnxruntime.quantization import QuantType, quantize_dynamic

        quantize_dynamic(str(path), str(folder / "model_int8.onnx"), weight_type=QuantType.QInt8)
        path = folder / "model_int8.onnx"
    options = ort.SessionOptions()
    options.intra_op_num_threads = os.cpu_count() or 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])

    def encode(texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), 384), dtype=np.float32)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        for start in range(0, len(order), 16):
            idx = order[start : start + 16]
            enc = tokenizer([texts[i] for i in idx], padding=True, truncation=True, max_length=256, return_tensors="np")
            hidden = session.run(None, {n: enc[n].astype(np.int64) for n in names})[0]
            mask = enc["attention_mask"][..., None].astype(np.float32)
            pooled = (hidden * mask).sum(1) / np.clip(mask.sum(1), 1e-9, None)
            out[idx] = pooled / np.linalg.norm(pooled, axis=1, keepdims=True)
        return out

    return encode


def main() -> None:
    import torch
    from sentence_transformers import SentenceTransformer

    from kbtool.search.embeddings import _packaged_path

    path = _packaged_path()
    texts = chunk_texts()
    model = SentenceTransformer(path, device="cpu")
    rate, reference = timed(lambda t: model.encode(t, batch_size=32, normalize_embeddings=True), texts)
    print(f"{len(texts)} chunks of the starter KB, {torch.get_num_threads()} torch threads")
    print(f"  {'pytorch fp32, batch 32 (reference)':<40} {rate:6.1f} texts/s   1.00x")

    def report(label: str, encode) -> None:
        speed, vectors = timed(encode, texts)
        cosine = (vectors * reference).sum(1)
        print(
            f"  {label:<40} {speed:6.1f} texts/s   {speed / rate:.2f}x   agreement: cosine min {cosine.min():.5f}, "
            f"mean {cosine.mean():.5f}"
        )

    for batch in (16, 8):
        report(
            f"pytorch fp32, batch {batch}", lambda t, b=batch: model.encode(t, batch_size=b, normalize_embeddings=True)
        )
    from kbtool.search.embeddings import native_bf16

    def autocast_bf16(t):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return model.encode(t, batch_size=16, normalize_embeddings=True)

    native = "native on this CPU" if native_bf16() else "emulated: no native bf16 on this CPU"
    report(f"pytorch bf16 autocast, batch 16 ({native}; kb's documents when native)", autocast_bf16)
    halved = SentenceTransformer(path, device="cpu", model_kwargs={"dtype": torch.bfloat16})
    report(
        "pytorch bf16 weights, batch 16",
        lambda t: halved.encode(t, batch_size=16, normalize_embeddings=True, convert_to_tensor=True).float().numpy(),
    )
    quantized = SentenceTransformer(path, device="cpu")
    torch.ao.quantization.quantize_dynamic(quantized[0].auto_model, {torch.nn.Linear}, dtype=torch.qint8, inplace=True)
    report("pytorch dynamic int8, batch 16", lambda t: quantized.encode(t, batch_size=16, normalize_embeddings=True))
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        print("  onnx: skipped (pip install onnxruntime onnx to measure it)")
        return
    with tempfile.TemporaryDirectory() as tmp:
        report("onnxruntime fp32, batch 16", onnx_encoder(path, False, Path(tmp)))
        report("onnxruntime dynamic int8, batch 16", onnx_encoder(path, True, Path(tmp)))
        query_latency(model, path, Path(tmp))


def query_latency(model, path: str, cache: Path) -> None:
    """One short query at a time, as a search embeds it: PyTorch against kb's onnxruntime path."""
    import statistics

    from kbtool.search.evaluation import load_gold
    from kbtool.search.onnx_encoder import open_encoder

    os.environ["KB_CACHE_DIR"] = str(cache)
    queries = [g.q for g in load_gold(REPO / "tests" / "gold" / "starter.jsonl")]
    encoder = open_encoder(path)  # kb's own encoder: made in a child process, checked on probes
    assert encoder is not None, "the ONNX query encoder did not agree with PyTorch"

    def p50(encode) -> float:
        samples = []
        for text in queries * 3:
            started = time.perf_counter()
            encode(text)
            samples.append((time.perf_counter() - started) * 1000)
        return statistics.median(samples)

    torch_ms = p50(lambda t: model.encode([t], normalize_embeddings=True, show_progress_bar=False))
    onnx_ms = p50(encoder.encode)
    cosine = min(float(encoder.encode(q) @ model.encode([q], normalize_embeddings=True)[0]) for q in queries)
    print(
        f"one query ({len(queries)} starter gold queries x 3), p50: pytorch {torch_ms:.1f} ms, "
        f"onnxruntime (1 thread, kb's query path) {onnx_ms:.1f} ms; agreement: cosine min {cosine:.6f}"
    )


if __name__ == "__main__":
    main()
