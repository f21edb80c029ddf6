"""The judging tools: compare a change before recording it, check the gates' locks, run a locked gate."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.evidence import formats
from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import Comparison, GateRunResult, LockCheck
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import READS, RUNS, KbChoice, Tool, on, read_from, tool

# the rows a compare shows unless metrics are named: an AIPerf export has 65, ~7k tokens of rows and their JSON
FIRST_METRICS = 6


@tool(READS)
async def compare(
    ctx: Context,
    candidate: Annotated[
        str, Field(description="an export, a folder of runs or a finding's id; paths resolve from the server's folder")
    ],
    baseline: Annotated[str, Field(description="the same, for the baseline")],
    ignore_conditions: Annotated[list[str] | None, Field(description="load conditions allowed to differ")] = None,
    metrics: Annotated[list[str] | None, Field(description="only these (default: the headline ones)")] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, Comparison]:
    """Judge a change before recording it: each metric's means, 95% intervals, change and verdict
    (better, worse, no clear change) under one load."""

    def answer(base: KnowledgeBase) -> CallToolResult:
        whole = base.compare(candidate, baseline, ignore=ignore_conditions or [], read_from=read_from(ctx, base))
        # the headline each format declares first (kbtool.evidence.formats), shown when measured
        return answers.comparison(whole.only(metrics, FIRST_METRICS, formats.headline_names()), whole)

    return await on(ctx, kb, answer)


@tool(READS)
async def gate_verify(ctx: Context, kb: KbChoice = None) -> Annotated[CallToolResult, LockCheck]:
    """Check every locked gate against kb.lock (a changed gate guards nothing and will not run)."""
    return await on(ctx, kb, lambda base: answers.lock_check(base.verify_gates()))


@tool(RUNS)
async def gate_run(
    ctx: Context,
    id: Annotated[str, Field(description="a locked gate's id")],
    in_dir: Annotated[
        str | None,
        Field(description="the project's folder, from the server's working folder (default: kb.toml [gates])"),
    ] = None,
    confirms: Annotated[str | None, Field(description="a finding this run measured")] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, GateRunResult]:
    """Run a locked, unchanged gate on the project and record the run (one commit): pass or fail, the
    value, why."""
    return await on(
        ctx,
        kb,
        lambda base: answers.gate_run(base.run_gate(id, in_dir=in_dir, confirms=confirms, require_lock=True)),
    )


TOOLS: tuple[Tool, ...] = (compare, gate_verify, gate_run)
