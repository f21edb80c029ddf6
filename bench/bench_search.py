"""Search benchmarks: cold CLI, warm queries at 10k and 100k cards, incremental re-index,
indexing throughput against raw sentence-transformers, and memory.

    .venv/bin/python bench/bench_search.py [--scale 10000,100000] [--skip-scale]

Synthetic cards (for scale) are generated from a fixed vocabulary with a fixed seed. Their
bulk document vectors come from the hashing embedder, because embedding 100k texts with the
real model would take hours here; queries and small re-index batches use the real model, so
the timed path (query embedding, BM25, matrix product, fusion) is the real one.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import kbtool  # noqa: E402
from kbtool.search.embeddings import HashingEmbedder, SentenceTransformerEmbedder  # noqa: E402

VOCAB = (
    "nvfp4 fp8 bf16 moe decode prefill kv cache paged attention rope cuda graph kernel triton cutlass b200 h100 a100 "
    "throughput latency ttft tpot batch concurrency scheduler speculative eagle draft acceptance tensor parallel "
    "expert routing top-k gemm grouped sampler tokenizer chat template vllm sglang tensorrt flashinfer nccl "
    "all-reduce quantization scale block accuracy oracle gate baseline regression memory bandwidth occupancy"
).split()


def p50(samples: list[float]) -> float:
    return statistics.median(samples)


class ScaleEmbedder:
    """Real model for queries and small batches; hashing vectors for bulk synthetic documents."""

    def __init__(self) -> None:
        self.real = SentenceTransformerEmbedder()
        self.bulk = HashingEmbedder(self.real.dimension)
        self.model_id, self.dimension = self.real.model_id, self.real.dimension

    def embed_documents(self, texts):
        return self.bulk.embed_documents(texts) if len(texts) > 64 else self.real.embed_documents(texts)

    def embed_query(self, text):
        return self.real.embed_query(text)

    def prepare_for_queries(self):
        self.real.prepare_for_queries()


def corpus_words() -> list[str]:
    """Real English word frequencies for synthetic cards: the words of the ml-engineering book."""
    corpus = REPO.parent / "shared" / "corpus" / "ml-engineering"
    words = [w for p in sorted(corpus.rglob("*.md")) for w in p.read_text(encoding="utf-8").split() if w.isalpha()]
    return words or VOCAB


def synthetic_kb(root: Path, n: int, seed: int = 7) -> None:
    """n finding cards whose text is windows of real prose plus inference vocabulary."""
    kbtool.init(root, name=f"synthetic-{n}")
    rng = random.Random(seed)
    prose = corpus_words()
    folder = root / "kb" / "finding"
    folder.mkdir(parents=True)
    hardware = ["B200", "H100", "A100", "H200"]
    for i in range(n):
        start = rng.randrange(max(1, len(prose) - 80))
        words = [w.lower() for w in prose[start : start + 70]] + rng.choices(VOCAB, k=10)
        rng.shuffle(words)
        title = " ".join(words[:6]) + f" {i}"
        (folder / f"synthetic-{i}.md").write_text(
            f"---\nid: synthetic-{i}\nkind: finding\ntitle: {title}\nstatus: tentative\n"
            f"claim: {' '.join(words[6:20])}\napplies_to:\n  hardware: {rng.choice(hardware)}\nschema_version: 1\n"
            f"---\n\n## Details\n\n{' '.join(words[20:])}\n"
        )


def bench_scale(n: int, queries: list[str]) -> None:
    """Warm queries as the daemon and `kb serve` run them: model loaded, queries through onnxruntime."""
    cache = Path(os.environ.get("KB_BENCH_CACHE", Path(tempfile.gettempdir()) / "kb-bench-cache")) / f"synthetic-{n}"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kb"
        t = time.perf_counter()
        if (cache / "kb.toml").exists():  # the cards are generated with a fixed seed: the same every run
            shutil.copytree(cache, root, ignore=shutil.ignore_patterns(".kb"))
        else:
            synthetic_kb(root, n)
            shutil.copytree(root, cache, ignore=shutil.ignore_patterns(".kb"))
        made = time.perf_counter() - t
        embedder = ScaleEmbedder()
        kb = kbtool.open(root, embedder=embedder)
        t = time.perf_counter()
        stats = kb.refresh_index()
        built = time.perf_counter() - t
        embedder.prepare_for_queries()

        def measure() -> dict[str, list[float]]:
            for q in queries:  # warm: model loaded, matrix in memory, each query once
                kb.search(q)
            times: dict[str, list[float]] = {"hybrid": [], "bm25": [], "filtered": []}
            for q in queries:
                fresh = q + " regression"  # not in the query-vector cache: the real model embeds it
                for name, run in (
                    ("hybrid", lambda fresh=fresh: kb.search(fresh, k=10)),
                    ("bm25", lambda fresh=fresh: kb.search(fresh, k=10, mode="bm25")),
                    ("filtered", lambda q=q: kb.search(q + " scheduler", k=10, where=["applies_to.hardware=H100"])),
                ):
                    start = time.perf_counter()
                    run()
                    times[name].append(time.perf_counter() - start)
            return times

        fts5 = measure()
        t = time.perf_counter()
        kb.index.read_postings_in_background()  # what the daemon and `kb serve` do at start
        kb.index._postings_reading.join()
        read = time.perf_counter() - t
        warm = measure()
        assert kb.index._postings is not None
        ms = lambda xs: f"{p50(xs) * 1000:.1f}"  # noqa: E731
        print(
            f"scale {n} cards ({stats.scanned} files, {len(kb.index.chunk_card)} chunks; "
            f"written or copied in {made:.1f} s, "
            f"indexed in {built:.1f} s; queries through onnxruntime: {embedder.real.fast_queries}), p50 over "
            f"{len(queries)} queries, BM25 by FTS5 -> from the postings in memory (read in {read:.1f} s): "
            f"warm hybrid {ms(fts5['hybrid'])} -> {ms(warm['hybrid'])} ms (max {max(warm['hybrid']) * 1000:.1f}), "
            f"bm25 only {ms(fts5['bm25'])} -> {ms(warm['bm25'])} ms, hybrid with an applies_to filter "
            f"{ms(fts5['filtered'])} -> {ms(warm['filtered'])} ms"
        )
        after_write = []
        source = (root / "kb" / "finding" / "synthetic-5.md").read_text()
        for i in range(3):  # as an agent's add-finding then search: a new card file, then the next query
            (root / "kb" / "finding" / f"bench-new-{i}.md").write_text(
                source.replace("id: synthetic-5", f"id: bench-new-{i}")
            )
            start = time.perf_counter()
            kb.search(f"nccl timeout {i}")
            after_write.append(time.perf_counter() - start)
        print(
            f"scale {n}: a search right after a new card (listing, stat scan, views, keyword and vector patches, "
            f"embedding the new chunks) p50 {p50(after_write) * 1000:.0f} ms of 3"
        )
        if n <= 10_000:
            target = root / "kb" / "finding" / "synthetic-5.md"
            target.write_text(target.read_text().replace("## Details", "Edited for the benchmark.\n\n## Details"))
            start = time.perf_counter()
            stats = kb.refresh_index()
            print(
                f"scale {n}: one edited card re-indexed in {(time.perf_counter() - start) * 1000:.0f} ms "
                f"({stats.updated} updated, {stats.embedded} chunk embedded)"
            )


def bench_cold_cli(runs: int = 20) -> None:
    env = {**os.environ}
    env.pop("KB_DAEMON", None)
    env.pop("KB_EMBEDDER", None)
    subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(REPO), "index"], check=True, capture_output=True, env=env
    )
    from kbtool.surfaces.daemon.client import stop_daemon

    stop_daemon(REPO)
    cmd = [str(REPO / ".venv" / "bin" / "kb"), "--kb", str(REPO), "search", "NVFP4 MoE decode", "--json"]
    start = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    first = time.perf_counter() - start
    samples = []
    for i in range(runs):
        start = time.perf_counter()
        subprocess.run([*cmd[:-2], f"NVFP4 MoE decode {i}", "--json"], check=True, capture_output=True, env=env)
        samples.append(time.perf_counter() - start)
    in_process = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True, env={**env, "KB_DAEMON": "0"})
        in_process.append(time.perf_counter() - start)
    print(
        f"cold `kb search` (fresh process each, daemon warm): p50 {p50(samples) * 1000:.0f} ms, "
        f"max {max(samples) * 1000:.0f} ms over {runs}; first search that starts the daemon {first:.2f} s; "
        f"without the daemon (KB_DAEMON=0) p50 {p50(in_process):.2f} s"
    )


def bench_throughput(corpus: Path, limit: int = 600) -> None:
    """kb's indexing against raw model.encode on the same chunk texts, in fp32 (kb before bf16) and as kb runs now."""
    from kbtool.search.chunking import chunk_card

    with tempfile.TemporaryDirectory() as tmp:
        kb = kbtool.init(Path(tmp) / "kb")
        kb.import_path(corpus)
        # the cards whose chunks make up the first `limit` chunks: the raw model gets exactly their texts
        kept, texts = set(), []
        for s in kb.cards():
            if len(texts) >= limit:
                break
            kept.add(s.path)
            texts.extend(c.text for c in chunk_card(s.card, s.body))
        for s in kb.cards():
            if s.path not in kept:
                (kb.root / s.path).unlink()
        model = SentenceTransformerEmbedder()._model()
        model.encode(texts[:32], batch_size=32)  # warm up threads
        start = time.perf_counter()
        model.encode(texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
        raw = len(texts) / (time.perf_counter() - start)
        rates = {}
        for precision in ("fp32", "auto"):
            os.environ["KB_EMBED_PRECISION"] = precision
            embedder = SentenceTransformerEmbedder()
            embedder._loaded = model  # one model in memory; the precision is the embedder's own
            shutil.rmtree(kb.root / ".kb", ignore_errors=True)
            fresh = kbtool.open(kb.root, embedder=embedder)
            start = time.perf_counter()
            stats = fresh.refresh_index()
            rates[precision] = (stats.embedded / (time.perf_counter() - start), embedder.documents_in_bf16)
            fresh.index.db.conn.close()
        os.environ.pop("KB_EMBED_PRECISION")
        (fp32, _), (now, bf16) = rates["fp32"], rates["auto"]
        print(
            f"indexing {corpus.name} ({stats.embedded} chunks, incl. parse, FTS and SQLite): raw sentence-transformers "
            f"fp32 {raw:.1f} chunks/s; kb in fp32 {fp32:.1f} chunks/s ({fp32 / raw:.2f} of raw); kb now "
            f"({'bf16' if bf16 else 'fp32'} documents) {now:.1f} chunks/s, {now / fp32:.2f}x kb in fp32"
        )


def bench_memory() -> None:
    env = {**os.environ, "KB_DAEMON": "0"}
    env.pop("KB_EMBEDDER", None)
    code = (
        "import resource, sys, kbtool\nkb = kbtool.open(sys.argv[1])\nkb.search('NVFP4 MoE decode', mode=sys.argv[2])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    for mode in ("bm25", "hybrid"):
        out = subprocess.run(
            [sys.executable, "-c", code, str(REPO), mode], check=True, capture_output=True, text=True, env=env
        )
        print(
            f"memory: a {'lexical-only' if mode == 'bm25' else 'model-loaded'} search process peaks at "
            f"{int(out.stdout.strip()) / 1024:.0f} MB RSS"
        )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--scale", default="10000,100000")
    parser.add_argument("--skip-scale", action="store_true")
    parser.add_argument("--scale-only", action="store_true", help="only the warm queries at scale")
    args = parser.parse_args()
    if not args.scale_only:
        bench_cold_cli()
        bench_memory()
        corpus = REPO.parent / "shared" / "corpus" / "ml-engineering"
        if corpus.is_dir():
            bench_throughput(corpus)
    if not args.skip_scale:
        queries = [
            "NVFP4 MoE decode",
            "paged attention kv cache",
            "speculative decoding acceptance",
            "cuda graph capture",
            "fp8 accuracy oracle",
            "tensor parallel all-reduce",
            "scheduler batch concurrency",
            "ttft prefill",
            "expert routing top-k",
            "flashinfer kernel b200",
            "tokenizer chat template",
            "memory bandwidth decode",
        ]
        for n in (int(x) for x in args.scale.split(",")):
            bench_scale(n, queries)
    print(f"bench process peak RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
