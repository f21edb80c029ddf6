"""Indexing throughput of kb's two embedding runtimes, each in a fresh process as kb runs it:
onnxruntime (the default where it is installed; torch never imported) against PyTorch
(KB_EMBED_RUNTIME=torch: bfloat16 where the CPU has it, as kb picks; and fp32).

    .venv/bin/python bench/bench_embed_runtime.py [--runs 3] [--corpus /work/shared/corpus/ml-engineering]

Texts: the chunks of the starter KB's cards, and of the ml-engineering corpus imported into a
scratch knowledge base. Per runtime and corpus: documents (chunks) a second over all of them (median
of the runs), the seconds the runtime took to load (first text), the process's peak RSS (VmHWM), and
the lowest cosine between a chunk's onnxruntime and PyTorch fp32 vectors. The ONNX export is taken
from (or made once into) this user's cache.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CHILD = """
import json, sys, time
import numpy as np
from kbtool.search.embeddings import SentenceTransformerEmbedder
texts = json.load(open(sys.argv[1]))
started = time.perf_counter()
embedder = SentenceTransformerEmbedder()
embedder.embed_documents(texts[:1])
loaded = time.perf_counter() - started
started = time.perf_counter()
vectors = embedder.embed_documents(texts)
rate = len(texts) / (time.perf_counter() - started)
np.save(sys.argv[2], vectors)
status = dict(line.split(":", 1) for line in open("/proc/self/status") if ":" in line)
print(json.dumps({"rate": rate, "loaded": loaded, "runtime": embedder.runtime, "torch": "torch" in sys.modules,
                  "bf16": embedder.documents_in_bf16,
                  "peak_mib": int(status["VmHWM"].split()[0]) / 1024}))
"""

RUNTIMES = {
    "onnxruntime": {},
    "PyTorch, kb's precision": {"KB_EMBED_RUNTIME": "torch"},
    "PyTorch fp32": {"KB_EMBED_RUNTIME": "torch", "KB_EMBED_PRECISION": "fp32"},
    # a CPU without bf16 (nor AVX-512), as far as software can say so: PyTorch's own kernels, oneDNN and MKL held
    # to AVX2. onnxruntime's fp32 kernels use no bf16 instruction anyway (they may still use AVX-512 here)
    "PyTorch fp32, AVX2 only": {
        "KB_EMBED_RUNTIME": "torch",
        "KB_EMBED_PRECISION": "fp32",
        "ATEN_CPU_CAPABILITY": "avx2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "MKL_ENABLE_INSTRUCTIONS": "AVX2",
    },
}


def chunk_texts(root: Path) -> list[str]:
    import kbtool

    kb = kbtool.open(root)
    kb.refresh_index(semantic=False)
    return [row[0] for row in kb.index.db.execute("SELECT text FROM chunks ORDER BY id")]


def corpus_texts(corpus: Path, folder: Path) -> tuple[int, list[str]]:
    import kbtool

    kb = kbtool.init(folder / "corpus", name="corpus")
    kb.import_path(corpus)
    texts = chunk_texts(kb.root)
    cards = kb.index.db.execute("SELECT count(DISTINCT card_path) FROM chunks").fetchone()[0]
    return cards, texts


def measure(texts: list[str], folder: Path, runs: int, only: list[str]) -> None:
    import numpy as np

    source = folder / "texts.json"
    source.write_text(json.dumps(texts))
    vectors = {}
    for name, extra in RUNTIMES.items():
        if only and name not in only:
            continue
        env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_EMBED", "KB_EMBEDDER"))}
        rows = []
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, "-c", CHILD, str(source), str(folder / "v.npy")],
                env={**env, **extra},
                capture_output=True,
                text=True,
                check=True,
            )
            rows.append(json.loads(out.stdout.splitlines()[-1]))
        vectors[name] = np.load(folder / "v.npy")
        rates = [r["rate"] for r in rows]
        print(
            f"  {name} (runtime {rows[0]['runtime']}, torch imported: {rows[0]['torch']}, bf16: {rows[0]['bf16']}): "
            f"{statistics.median(rates):.1f} docs/s ({', '.join(f'{r:.1f}' for r in rates)}); "
            f"loaded in {statistics.median(r['loaded'] for r in rows):.1f} s; "
            f"peak RSS {statistics.median(r['peak_mib'] for r in rows):.0f} MiB"
        )
    for other in [name for name in vectors if name != "onnxruntime"]:
        if "onnxruntime" in vectors:
            agreement = float((vectors["onnxruntime"] * vectors[other]).sum(1).min())
            print(f"  onnxruntime vs {other}: lowest cosine over {len(texts)} chunks {agreement:.6f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus/ml-engineering"))
    parser.add_argument("--runtime", action="append", default=[], choices=list(RUNTIMES), help="only these")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start")
    with tempfile.TemporaryDirectory() as tmp:
        texts = chunk_texts(REPO)
        print(f"starter KB: {len(texts)} chunks, {os.cpu_count()} cores")
        measure(texts, Path(tmp), args.runs, args.runtime)
        cards, texts = corpus_texts(args.corpus, Path(tmp))
        print(f"{args.corpus.name}: {cards} cards, {len(texts)} chunks")
        measure(texts, Path(tmp), args.runs, args.runtime)


if __name__ == "__main__":
    main()
