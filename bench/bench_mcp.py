"""MCP benchmarks: `kb serve` over stdio on the starter knowledge base, with the real model.

    .venv/bin/python bench/bench_mcp.py [--queries 200]

Starts the server as a subprocess (as an MCP client would) on a fresh clone of this
repository (so the writes it times land in a throwaway copy), waits for the warm-up, then
times tool calls end to end through the SDK client: JSON-RPC over pipes, argument
validation, the search itself, result serialisation. Queries are distinct (no query-vector
cache hits) unless said otherwise. Target: `search` p50 <= 20 ms warm. The write-then-read
pair is an `add_finding` and the search right after it, which must find the new card in
both legs (it embeds the new chunks first).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
TOPICS = (
    "NVFP4 MoE decode",
    "KV cache quantization accuracy",
    "speculative decoding acceptance",
    "CUDA graph capture",
    "TTFT single stream",
    "BF16 oracle accuracy gate",
    "FP8 block scale",
    "greedy output reference engine",
    "paged attention block manager",
    "tensor parallel all-reduce",
    "prefill chunking latency",
    "throughput concurrency 32",
)


def quantiles(samples: list[float]) -> str:
    ordered = sorted(samples)
    pick = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))] * 1000  # noqa: E731
    return f"p50 {statistics.median(ordered) * 1000:.1f} ms, p95 {pick(0.95):.1f} ms, max {ordered[-1] * 1000:.1f} ms"


async def timed(client: Client, tool: str, args: dict) -> float:
    started = time.perf_counter()
    result = await client.call_tool(tool, args)
    elapsed = time.perf_counter() - started
    if result.is_error:
        raise SystemExit(f"{tool} {args} failed: {result.content[0].text}")
    return elapsed


async def main(n: int, clone: Path) -> None:
    env = {**os.environ, "KB_DAEMON": "0"}
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtool", "--kb", str(clone), "serve"], env=env)
    started = time.perf_counter()
    async with Client(params, read_timeout_seconds=300) as client:
        connected = time.perf_counter() - started
        first = await timed(client, "search", {"query": "warm-up wait"})  # queued behind the server's own warm-up
        ready = time.perf_counter() - started
        distinct = [await timed(client, "search", {"query": f"{TOPICS[i % len(TOPICS)]} {i}"}) for i in range(n)]
        repeated = [await timed(client, "search", {"query": TOPICS[i % len(TOPICS)]}) for i in range(n)]
        filtered = [
            await timed(
                client,
                "search",
                {"query": f"{TOPICS[i % len(TOPICS)]} {i}", "filters": {"applies_to.hardware": "B200"}},
            )
            for i in range(n // 2)
        ]
        found = (await client.call_tool("search", {"query": "NVFP4 MoE decode", "k": 50})).structured_content["hits"]
        hits = [h for h in found if h["kind"] != "skill"]  # get and related take card ids
        gets = [await timed(client, "get", {"id": hits[i % len(hits)]["id"]}) for i in range(n)]
        lists = [await timed(client, "list", {}) for _ in range(n // 4)]
        related = [await timed(client, "related", {"id": hits[i % len(hits)]["id"]}) for i in range(n // 4)]
        writes, reads = [], []
        for i in range(min(n, 20)):
            writes.append(
                await timed(
                    client,
                    "add_finding",
                    {"title": f"Zebrafish t{i} decode latency 3.1 ms", "metrics": {"tpot": "3.1ms"}},
                )
            )
            started_read = time.perf_counter()
            found_now = await client.call_tool("search", {"query": f"zebrafish t{i} decode latency", "mode": "vector"})
            reads.append(time.perf_counter() - started_read)
            if not any(h["title"].startswith(f"Zebrafish t{i} ") for h in found_now.structured_content["hits"]):
                raise SystemExit(f"the finding written {i} was not in the vector leg of the next search")
    print(f"kb serve (stdio) on the starter KB ({len(hits)} cards found for the probe), {n} calls each")
    print(
        f"  connect (process start + initialize): {connected * 1000:.0f} ms; first search ready at {ready:.2f} s "
        f"(model load + index check; that call {first * 1000:.0f} ms)"
    )
    print(f"  search, distinct queries:   {quantiles(distinct)}   (target p50 <= 20 ms)")
    print(f"  search, repeated queries:   {quantiles(repeated)}")
    print(f"  search, applies_to filter:  {quantiles(filtered)}")
    print(f"  get:                        {quantiles(gets)}")
    print(f"  list:                       {quantiles(lists)}")
    print(f"  related:                    {quantiles(related)}")
    print(f"  add_finding (one commit):   {quantiles(writes)}")
    print(f"  search right after a write: {quantiles(reads)}   (the new card in the vector leg every time)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        asyncio.run(main(parser.parse_args().queries, clone))
