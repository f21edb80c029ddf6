"""The reads the daemon answers besides search, defined once for both paths.

The reads the warm daemon answers besides search (list, gaps, stats), as JSON, and the same
reads in the calling process when no daemon is running: one definition for both paths."""

from __future__ import annotations

import json
from typing import Any

from kbtool.model.errors import BadInput

OPERATIONS = ("list", "gaps", "stats")


def run(kb: Any, op: str, args: dict[str, Any]) -> Any:
    """The JSON answer of one operation on a KnowledgeBase: list and gaps a CardPage and an OpenGaps (the
    MCP list and gaps tools' contracts), stats a Stats."""
    if op == "list":
        return _list(kb, args)
    if op == "gaps":
        from kbtool.model.contracts.base import GapsRequest

        return kb.open_gaps(GapsRequest.parse(args, "gaps")).to_json()
    if op == "stats":
        return kb.stats().to_json()
    raise BadInput(f"unknown operation {op!r} (one of search, {', '.join(OPERATIONS)})")


def _list(kb: Any, args: dict[str, Any]) -> Any:
    """A CardPage; json_text: as JSON text (what `kb list --json` prints); brief: the rows a listing prints,
    [id, kind, status, (applies,) title], a tenth of the JSON at 1k cards. The rest of args is a ListRequest,
    parsed once here."""
    from kbtool.model.contracts.base import ListRequest

    shape = {k: args[k] for k in ("brief", "json_text") if k in args}
    request = ListRequest.parse({k: v for k, v in args.items() if k not in shape}, "list")
    if not kb.config.sources and request.sources:
        request = request.model_copy(update={"sources": False})  # nothing to read elsewhere
    if shape.get("brief"):
        from kbtool.facade.card_standing import standings

        found = kb.listing(request)
        said = standings(kb, found)
        return [_row(s, said.get(s.id)) for s in found]
    if (
        shape.get("json_text")
        and not request.sources
        and not (request.only_applying or kb.environment_for(request.applies_for))
    ):
        return kb.card_page_json(request)  # made where the cached cards are
    page = kb.card_page(request).to_json()
    return json.dumps(page, ensure_ascii=False, indent=1) if shape.get("json_text") else page


def _row(summary: Any, standing: str | None) -> list[str]:
    applies = [summary.applies] if summary.applies else []
    status = f"{summary.status} ({standing})" if standing else summary.status
    return [summary.id, summary.kind, status, *applies, summary.title]
