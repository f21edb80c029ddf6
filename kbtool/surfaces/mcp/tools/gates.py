"""The judging tools: compare a change before recording it, check the gates' locks, run a locked gate."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult
from pydantic import Field

from kbtool.model.contracts import Comparison, GateRunResult, LockCheck
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import READS, RUNS, KbChoice, Tool, on, tool


@tool(READS)
async def compare(
    ctx: Context,
    candidate: Annotated[
        str, Field(description="an export, an AIPerf artifact folder, a folder of runs, or a finding's id")
    ],
    baseline: Annotated[str, Field(description="the same, for the baseline")],
    ignore_conditions: Annotated[
        list[str] | None,
        Field(description="load conditions to compare across when they differ (e.g. input_tokens); recorded"),
    ] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, Comparison]:
    """Judge a change before recording it: each metric both sides measured under the same load, with the
    means' 95% intervals, the change and its interval, and a verdict (better, worse, no clear change).
    Runs at different loads are refused, naming the condition. Several runs a side (a folder of them) give
    intervals; one run needs per-request records for one."""
    return await on(
        ctx, kb, lambda base: answers.comparison(base.compare(candidate, baseline, ignore=ignore_conditions or []))
    )


@tool(READS)
async def gate_verify(ctx: Context, kb: KbChoice = None) -> Annotated[CallToolResult, LockCheck]:
    """Check every locked gate against kb.lock: a gate whose file changed since it was locked no longer
    guards anything (gate_run refuses it); ok when all match."""
    return await on(ctx, kb, lambda base: answers.lock_check(base.verify_gates()))


@tool(RUNS)
async def gate_run(
    ctx: Context,
    id: Annotated[str, Field(description="a locked gate's id")],
    in_dir: Annotated[
        str | None,
        Field(
            description="the project it judges, a folder on this machine holding its runs (needed unless "
            "kb.toml sets [gates] project)"
        ),
    ] = None,
    confirms: Annotated[
        str | None, Field(description="a finding the gate confirms when it passes (recorded as gate:ID)")
    ] = None,
    kb: KbChoice = None,
) -> Annotated[CallToolResult, GateRunResult]:
    """Run a locked gate's check (its command, or the comparison kb runs itself) on the project in
    in_dir and record the run in one commit: pass or fail, the value, why, the output. Only locked,
    unchanged gates run; with confirms, a pass confirms that finding."""
    return await on(
        ctx,
        kb,
        lambda base: answers.gate_run(base.run_gate(id, in_dir=in_dir, confirms=confirms, require_lock=True)),
    )


TOOLS: tuple[Tool, ...] = (compare, gate_verify, gate_run)
