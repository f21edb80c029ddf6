"""MCP benchmarks: `kb serve` over stdio on the starter knowledge base, with the real model.

    .venv/bin/python bench/bench_mcp.py [--queries 200]
    .venv/bin/python bench/bench_mcp.py --tokens [--corpus /work/shared/corpus/ml-engineering]

Starts the server as a subprocess (as an MCP client would) on a fresh clone of this
repository (so the writes it times land in a throwaway copy), waits for the warm-up, then
times tool calls end to end through the SDK client: JSON-RPC over pipes, argument
validation, the search itself, result serialisation. Queries are distinct (no query-vector
cache hits) unless said otherwise. Target: `search` p50 <= 20 ms warm. The write-then-read
pair is an `add_finding` and the search right after it, which must find the new card in
both legs (it embeds the new chunks first).

--tokens measures what the server costs an agent's context instead (o200k_base tokens, counted as
tests/process/test_budget.py counts them: the test extra installs the tokenizer): each tool's definition as
list_tools gives it, then each default answer (text and structured content together) on the starter KB
with the corpus imported (~850 cards) and a finding of an AIPerf export.
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
from mcp_workload import TOPICS, until_semantic

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "process"))  # test_budget
from test_budget import tokens  # the one counter every budget is held to

REPO = Path(__file__).resolve().parent.parent


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
        await until_semantic(client, {"query": "warm-up wait"})  # the model loaded: what follows is warm
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


async def context_costs(clone: Path, corpus: Path) -> None:
    """The tokens of each tool's definition, and of each default answer on ~850 cards."""
    env = {**os.environ, "KB_DAEMON": "0", "KB_EMBEDDER": "hashing"}
    kb = [sys.executable, "-m", "kbtool", "--kb", str(clone)]
    params = StdioServerParameters(command=sys.executable, args=[*kb[1:], "serve"], env=env)
    async with Client(params, read_timeout_seconds=300) as client:
        tools = (await client.list_tools()).tools
    costs = {t.name: tokens(t.model_dump(by_alias=True, exclude_none=True, mode="json")) for t in tools}
    print(f"tool definitions, {len(tools)} tools: {sum(costs.values())} tokens")
    print("  " + ", ".join(f"{name} {n}" for name, n in costs.items()))
    subprocess.run([*kb, "import", str(corpus)], env=env, check=True, capture_output=True)
    export = REPO / "tests" / "data" / "aiperf"
    title = "AIPerf decode: output token throughput and TTFT"
    added = [*kb, "add-finding", "--title", title, "--from", str(export / "profile_export_aiperf.json")]
    finding = subprocess.run(added, env=env, check=True, capture_output=True, text=True).stdout.strip()
    calls = {
        "recent": {}, "list": {}, "gaps": {}, "log": {"id": finding}, "skills": {}, "lint": {},
        "compare": {"candidate": str(export), "baseline": str(export)}, "search": {"query": "NVFP4 MoE decode"},
        "get": {"id": finding}, "get kb skill": {"id": "kb"}, "related": {"id": finding},
    }  # fmt: skip
    async with Client(params, read_timeout_seconds=300) as client:
        cards = (await client.call_tool("list", {})).structured_content["total"]
        print(f"default answers on {cards} cards (text + structured content):")
        for name, args in calls.items():
            answer = await client.call_tool(name.split(" ")[0], args)
            text = "\n".join(c.text for c in answer.content)
            print(f"  {name:14} {tokens(text) + tokens(answer.structured_content):6} tokens")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--tokens", action="store_true", help="measure the context an agent pays instead")
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus/ml-engineering"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        if args.tokens:
            asyncio.run(context_costs(clone, args.corpus))
        else:
            asyncio.run(main(args.queries, clone))
