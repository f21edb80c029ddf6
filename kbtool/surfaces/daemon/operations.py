"""The reads the warm daemon answers besides search (list, gaps, stats), as JSON, and the same
reads in the calling process when no daemon is running: one definition for both paths."""

from __future__ import annotations

import json
from typing import Any

from kbtool.model.errors import BadInput

OPERATIONS = ("list", "gaps", "stats")
JUDGED = ("for", "only_applying")  # the options that judge a read against an environment


def run(kb: Any, op: str, args: dict[str, Any]) -> Any:
    """The JSON answer of one operation on a KnowledgeBase."""
    if op == "list":
        unknown = set(args) - {"kind", "status", "tags", "where", "brief", "json_text", "sources", *JUDGED}
        if unknown:
            raise BadInput(f"list: unknown option(s) {', '.join(sorted(unknown))}")
        query = (args.get("kind"), args.get("status"), _strings(args, "tags"), _strings(args, "where"))
        pairs, only = _strings(args, "for"), bool(args.get("only_applying"))
        everywhere = bool(args.get("sources")) and bool(kb.config.sources)
        if args.get("json_text") and not everywhere and not (only or kb.environment_for(pairs)):
            return kb.summaries_json(*query)  # what `kb list --json` prints, made where the cached cards are
        found = kb.summaries_everywhere(*query) if everywhere else kb.summaries(*query)
        found = kb.applying(found, pairs, only)
        if args.get("json_text"):
            return json.dumps([s.to_dict() for s in found], ensure_ascii=False, indent=1)
        # brief: the rows a listing prints, [id, kind, status, (applies,) title]; a tenth of the JSON at 1k cards
        return [_row(s) for s in found] if args.get("brief") else [s.to_dict() for s in found]
    if op == "gaps":
        unknown = set(args) - {"sources", *JUDGED}
        if unknown:
            raise BadInput(f"gaps: unknown option(s) {', '.join(sorted(unknown))}")
        pairs, only = _strings(args, "for"), bool(args.get("only_applying"))
        found = kb.gaps_everywhere(pairs, only) if args.get("sources") else kb.applying(kb.gaps(), pairs, only)
        return [g.to_dict() for g in found]
    if op == "stats":
        return kb.stats().to_json()
    raise BadInput(f"unknown operation {op!r} (one of search, {', '.join(OPERATIONS)})")


def _row(summary: Any) -> list[str]:
    applies = [summary.applies] if summary.applies else []
    return [summary.id, summary.kind, summary.status, *applies, summary.title]


def _strings(args: dict[str, Any], key: str) -> list[str]:
    value = args.get(key) or []
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadInput(f"{key}: expected a list of strings")
    return value
