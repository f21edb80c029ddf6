"""A gate's lock: the hash `kb gate lock` records in kb.lock, after which the gate must not change
(supersede it with a new gate instead).

The hash covers everything that defines the check (id, title, check, scope, body) and leaves out
what superseding a gate legitimately changes (status, links).
"""

from __future__ import annotations

import hashlib
import json

from ..model.cards import Gate
from ..model.errors import BadInput

LOCK_VERSION = 1


def gate_hash(gate: Gate, body: str) -> str:
    # the verdict of a review is, like status, about the gate and not part of the check
    data = gate.model_dump(
        mode="json",
        exclude={"status": True, "links": True, "provenance": {"reviewed_by", "reviewed"}},
        exclude_none=True,
    )
    canonical = json.dumps({"card": data, "body": body}, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def parse_lock(text: str | None) -> dict[str, str]:
    """kb.lock -> {gate id: sha256}."""
    if not text:
        return {}
    try:
        data = json.loads(text)
        gates = data["gates"]
        return {str(k): str(v["sha256"]) for k, v in gates.items()}
    except (json.JSONDecodeError, KeyError, TypeError, AttributeError) as exc:
        raise BadInput(f"kb.lock: not a valid lock file ({exc}); restore it from git") from None


def render_lock(entries: dict[str, str]) -> str:
    data = {"version": LOCK_VERSION, "gates": {k: {"sha256": v} for k, v in sorted(entries.items())}}
    return json.dumps(data, indent=2) + "\n"
