"""The knowledge bases one `kb serve` serves, by name, and the two threads their calls run on.

A KnowledgeBase object and its SQLite index are not meant for concurrent use, so each runs on one thread:
the writer's objects take the calls of tools that may write, one at a time, and the reader's, the same
folders opened again (as a second process would open them, sharing the embedding models), take the reading
tools' calls. A search then never waits behind a write's commit and embedding: under 32 MCP clients its
p99 fell to a third (bench/RESULTS.md), and a read after a write sees it, as the index follows the folder. The event
loop stays free for the transport. A KbError becomes a tool error carrying its one-line message; anything
else is logged and reported as a tool error too, so no input can take the server down.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import CallToolResult

from kbtool.facade.knowledge_base import KnowledgeBase
from kbtool.model.contracts import ServedKb, ServedKbs
from kbtool.model.errors import BadInput, KbError
from kbtool.surfaces.mcp.answers import in_mcp_words, with_notices

log = logging.getLogger("kb.serve")

T = TypeVar("T")
# whether the tool being answered may write (KbServer.call_tool sets it): a write runs on the writer, a read
# on the reader, each with its own KnowledgeBase of the same folder
call_writes: contextvars.ContextVar[bool] = contextvars.ContextVar("kb_serve_writing", default=True)


class Shelf:
    """The knowledge bases served, by name, the first the default, and the worker their calls share."""

    def __init__(self, bases: Mapping[str, KnowledgeBase], read_only: bool = False):
        if not bases:
            raise BadInput("no knowledge base to serve")
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve")
        self.reader = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-serve-read")
        self._readers: dict[str, KnowledgeBase] = {}
        self._opening = threading.Lock()
        self.bases = dict(bases)
        self.default = next(iter(self.bases))
        self.read_only = read_only

    def pick(self, name: str | None) -> KnowledgeBase:
        if name is None:
            return self.bases[self.default]
        if name not in self.bases:
            raise ToolError(f"no knowledge base {name!r} here; this server serves {', '.join(self.bases)}")
        return self.bases[name]

    async def answer(self, name: str | None, work: Callable[[KnowledgeBase], CallToolResult]) -> CallToolResult:
        """WORK on the knowledge base named (the default when None), on the worker, its notices in the answer."""
        kb = self.pick(name)
        if call_writes.get():
            return await self.run(lambda: _noticed(kb, work))
        key = name or self.default
        return await self.run(lambda: _noticed(self.reading(key), work), self.reader)

    def reading(self, name: str) -> KnowledgeBase:
        """The reader's KnowledgeBase of the base named: the same folder opened again, sharing its models."""
        with self._opening:
            if name not in self._readers:
                base = self.bases[name]
                opened = KnowledgeBase.open(base.root)
                opened._embedder = base.semantic_embedder()
                self._readers[name] = opened
            return self._readers[name]

    async def run(self, work: Callable[[], T], executor: ThreadPoolExecutor | None = None) -> T:
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(executor or self.worker, work)
        except KbError as exc:
            raise ToolError(in_mcp_words(str(exc))) from None
        except Exception as exc:
            log.exception("kb serve: a tool failed")
            raise ToolError(f"internal error: {type(exc).__name__}: {exc}") from None

    def warm(self) -> None:
        """Bring each reader's keyword index up to date before the first search asks; the model follows in the
        background. The writer's index follows at its first write, from the vectors the reader stored."""
        for name in self.bases:
            self.reader.submit(self._warm_reader, name)

    def _warm_reader(self, name: str) -> None:
        reader = self.reading(name)
        _warm_up(reader)
        reader.warm_sources()  # after _warm_up: what it says of a source is said to the first caller

    def served(self) -> ServedKbs:
        return ServedKbs(
            kbs=[
                ServedKb(
                    name=name,
                    title=kb.config.kb.name,
                    path=str(kb.root),
                    cards=len(kb.summaries()),
                    skills=len(kb.skills()),
                    open_gaps=len(kb.gaps()),
                    default=name == self.default,
                    writable=not self.read_only and kb.store.writable,
                )
                for name, kb in self.bases.items()
            ]
        )


def _noticed(kb: KnowledgeBase, work: Callable[[KnowledgeBase], CallToolResult]) -> CallToolResult:
    kb.notices.clear()
    answer = with_notices(work(kb), list(kb.notices))
    kb.notices.clear()
    return answer


def _warm_up(kb: KnowledgeBase) -> None:
    try:
        kb.warm_in_background()
        kb.notices.clear()  # said at start-up, not to the first caller
    except Exception as exc:
        log.warning("kb serve: warming the index failed: %s", exc)
