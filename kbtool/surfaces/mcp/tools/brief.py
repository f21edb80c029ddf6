"""The brief tool: what an agent needs after a context compaction, the same text as `kb brief`."""

from __future__ import annotations

from typing import Annotated

from mcp.server.mcpserver import Context
from mcp_types import CallToolResult

from kbtool.model.contracts import Brief
from kbtool.surfaces.mcp import answers
from kbtool.surfaces.mcp.tools.base import READS, For, KbChoice, Tool, on, tool


@tool(READS)
async def brief(ctx: Context, applies_for: For = None, kb: KbChoice = None) -> Annotated[CallToolResult, Brief]:
    """Call after a context compaction: the locked gates and their last runs, the must-constraints that
    apply, open gaps, newest findings, the review queue (~1.5k tokens)."""
    return await on(ctx, kb, lambda base: answers.result((made := base.brief(applies_for).over_mcp()).text(), made))


TOOLS: tuple[Tool, ...] = (brief,)
