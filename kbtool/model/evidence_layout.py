"""How a finding's evidence is laid out in its file, so a person can read and review it.

In memory (and in --json, the index and JSON Lines) every evidence entry is whole: its metric and numbers,
and what it was measured under (conditions, command, artifacts, environment, repo). One AIPerf export
gives 60-odd metrics that share all of that, and writing it under each made a card of 1,500 lines. So a
card file writes what entries share once, in `measured_under` (one item per run or load: what its
entries have in common), and each entry on one line with only what is its own; an entry of a card
measured under several says which with `under: N` (1-based). `expand` puts the entries back together
when a card is read, `compact` takes them apart when it is written; expand(compact(e)) == e.
"""

from __future__ import annotations

import json
from typing import Any

# what an entry has measured under, as opposed to what it measured
CONTEXT = ("command", "artifact", "artifacts", "baseline_artifacts", "environment", "repo")


def _key(entry: dict[str, Any]) -> str:
    return json.dumps([entry.get(k) for k in CONTEXT], sort_keys=True, default=str)


def compact(evidence: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(measured_under, entries): what the entries of each context share, written once, and the entries
    without it. No measured_under when the entries share nothing worth hoisting."""
    contexts: dict[str, list[int]] = {}
    for n, entry in enumerate(evidence):
        contexts.setdefault(_key(entry), []).append(n)
    groups: list[dict[str, Any]] = []
    which: dict[int, int] = {}
    for members in contexts.values():
        first = evidence[members[0]]
        shared = {k: first[k] for k in CONTEXT if first.get(k) not in (None, [], {})}
        each = [evidence[n].get("conditions") or {} for n in members]
        common = {k: v for k, v in each[0].items() if all(c.get(k, _MISSING) == v for c in each[1:])}
        if common:
            shared["conditions"] = common
        groups.append(shared)
        which.update({n: len(groups) for n in members})
    if not any(groups) or len(evidence) == 1:  # one entry is as readable whole
        return [], [dict(e) for e in evidence]
    entries = []
    for n, entry in enumerate(evidence):
        group = groups[which[n] - 1]
        own = {k: v for k, v in entry.items() if k not in CONTEXT}
        conditions = {k: v for k, v in (entry.get("conditions") or {}).items() if k not in group.get("conditions", {})}
        own.pop("conditions", None)
        if conditions:
            own["conditions"] = conditions
        if len(groups) > 1:
            own["under"] = which[n]
        entries.append(own)
    return groups, entries


_MISSING = object()


def expand(data: dict[str, Any]) -> dict[str, Any]:
    """A finding's frontmatter with every evidence entry whole again; ValueError naming a bad `under`."""
    groups = data.get("measured_under")
    evidence = data.get("evidence")
    if groups is None:
        if isinstance(evidence, list) and any(isinstance(e, dict) and e.get("under") is not None for e in evidence):
            raise ValueError("evidence: an entry says `under` but the card has no measured_under")
        return data
    if not isinstance(groups, list) or not all(isinstance(g, dict) for g in groups):
        raise ValueError("measured_under: expected a list of what evidence entries were measured under")
    if not isinstance(evidence, list):
        return {k: v for k, v in data.items() if k != "measured_under"}
    whole = []
    for n, entry in enumerate(evidence):
        if not isinstance(entry, dict):
            whole.append(entry)
            continue
        under = entry.get("under") if entry.get("under") is not None else 1 if len(groups) == 1 else None
        if isinstance(under, bool) or not isinstance(under, int) or not 1 <= under <= len(groups):
            raise ValueError(
                f"evidence[{n}].under: {under!r} is not one of the card's measured_under (1 to {len(groups)})"
            )
        group = groups[under - 1]
        if not isinstance(group.get("conditions") or {}, dict):
            raise ValueError(f"measured_under[{under - 1}].conditions: expected a mapping of condition -> value")
        merged = {**{k: v for k, v in group.items() if k != "conditions"}, **entry}
        merged.pop("under", None)
        conditions = {**(group.get("conditions") or {}), **(entry.get("conditions") or {})}
        if conditions:
            merged["conditions"] = conditions
        whole.append(merged)
    return {**{k: v for k, v in data.items() if k != "measured_under"}, "evidence": whole}
