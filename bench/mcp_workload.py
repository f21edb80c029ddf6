"""What the MCP benchmarks (bench_mcp.py, bench_team_server.py, bench_skills.py) share: the topics their agents
search for, and the wait for a server's semantic leg. A benchmark runs as a script (`python bench/bench_mcp.py`),
so this folder is on its import path."""

from __future__ import annotations

import asyncio
import time
from typing import Any

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
# the team-server benchmark's agents ask the others, as every run recorded in RESULTS.md did
TEAM_TOPICS = tuple(topic for topic in TOPICS if topic != "greedy output reference engine")

LOADING = "note: the semantic leg is still loading"  # what a vector search says while the model loads


async def until_semantic(client: Any, args: dict[str, Any], timeout_s: float = 900.0) -> Any:
    """A vector search (args: the search's other arguments), asked again until the server's model is loaded:
    while it loads, a vector search answers at once with no hits and a note, not once the model is there."""
    deadline = time.monotonic() + timeout_s
    while True:
        result = await client.call_tool("search", {**args, "mode": "vector"})
        if result.is_error:
            raise SystemExit(f"search {args} failed: {result.content[0].text}")
        if not any(getattr(part, "text", "").startswith(LOADING) for part in result.content):
            return result
        if time.monotonic() > deadline:
            raise SystemExit(f"the server's semantic leg was still loading after {timeout_s:.0f} s")
        await asyncio.sleep(0.2)
