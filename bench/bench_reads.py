"""list, gaps, stats and related at 1k and 10k cards, served from the index: in a warm process,
through the search daemon (what `kb list` uses when one is running) and over MCP.

    .venv/bin/python bench/bench_reads.py [--scale 1000,10000] [--calls 30]

Synthetic cards as in bench_search.py (windows of real prose, a fixed seed), plus one gap in
twenty. The vectors come from the hashing embedder (embedding 10k texts with the real model would
take hours here); `related` embeds its query with it too, so its numbers leave out the ~7-20 ms a
real query embedding adds. Targets: <= 20 ms at 1k cards, <= 100 ms at 10k.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import kbtool
from bench_search import synthetic_kb
from kbtool.search.embeddings import HashingEmbedder
from kbtool.surfaces.daemon.client import run_operation, stop_daemon


def p50_ms(fn, calls: int) -> float:
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def add_gaps(root: Path, n: int) -> None:
    folder = root / "kb" / "gap"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(0, n, 20):
        (folder / f"gap-{i}.md").write_text(
            f"---\nid: gap-{i}\nkind: gap\ntitle: Open question {i}?\nstatus: draft\n"
            f"question: Does change {i} help decode?\npriority: high\nschema_version: 1\n---\n"
        )


async def over_mcp(root: Path, calls: int) -> dict[str, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtool", "--kb", str(root), "serve"], env=env)
    async with Client(params, read_timeout_seconds=600) as client:
        await client.call_tool("list", {"limit": 1})  # the server's warm-up is done once this answers

        async def timed(tool: str, args: dict) -> float:
            samples = []
            for _ in range(calls):
                start = time.perf_counter()
                result = await client.call_tool(tool, args)
                samples.append(time.perf_counter() - start)
                assert not result.is_error, result.content[0].text
            return statistics.median(samples) * 1000

        return {
            "list": await timed("list", {"limit": 200}),
            "list for": await timed("list", {"limit": 200, "for": {"hardware": "H200"}}),
            "gaps": await timed("gaps", {}),
            "related": await timed("related", {"id": "synthetic-5"}),
        }


def bench(n: int, calls: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "kb"
        synthetic_kb(root, n)
        add_gaps(root, n)
        kb = kbtool.open(root, embedder=HashingEmbedder())
        kb.refresh_index()
        kb.summaries()
        local = {
            "list": p50_ms(lambda: kb.summaries(), calls),
            "list --where": p50_ms(lambda: kb.summaries(where=["applies_to.hardware=H100"]), calls),
            # every card judged against an environment and ordered by it (kbtool/model/applicability.py)
            "list --for": p50_ms(lambda: kb.applying(kb.summaries(), ["hardware=H200"]), calls),
            "gaps": p50_ms(kb.gaps, calls),
            "stats": p50_ms(kb.stats, calls),
            "related": p50_ms(lambda: kb.related("synthetic-5"), calls),
        }
        os.environ["KB_EMBEDDER"] = "hashing"
        try:
            kbtool.open(root).search("start the daemon")  # index with the hashing model id the daemon uses
            from kbtool.surfaces.daemon.client import run_searches

            run_searches(root, [{"query": "start the daemon"}])
            daemon = {
                "list": p50_ms(lambda: run_operation(root, "list", {"brief": True}), calls),
                "list --json": p50_ms(lambda: run_operation(root, "list", {"json_text": True}), calls),
                "list --for": p50_ms(
                    lambda: run_operation(root, "list", {"brief": True, "for": ["hardware=H200"]}), calls
                ),
                **{op: p50_ms(lambda op=op: run_operation(root, op), calls) for op in ("gaps", "stats")},
            }
        finally:
            stop_daemon(root)
            os.environ.pop("KB_EMBEDDER", None)
        mcp = asyncio.run(over_mcp(root, calls))
    print(f"{n} cards (+{len(range(0, n, 20))} gaps), p50 of {calls} calls:")
    print("  in a warm process: " + ", ".join(f"{k} {v:.1f} ms" for k, v in local.items()))
    print(
        "  through the daemon (a client call, JSON over the socket): "
        + ", ".join(f"{k} {v:.1f} ms" for k, v in daemon.items())
    )
    print("  over MCP (stdio, the SDK client): " + ", ".join(f"{k} {v:.1f} ms" for k, v in mcp.items()))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", default="1000,10000")
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    for size in (int(x) for x in args.scale.split(",")):
        bench(size, args.calls)
