"""kb.lock, the file: each locked gate's hashes, read and written in one layout.

An entry holds the hash of the gate's card, the hashes of the files its lock covers, and how many times a
person relocked it. The store reads kb.lock too (sync's merge, the history walk that finds a lock changed by
hand), so the format lives here; what a lock covers and how it is checked is kbtool/curation/gate_lock.py's."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document

LOCK_VERSION = 1


@dataclass(frozen=True)
class GateLock:
    """A gate's entry in kb.lock: the hash of its card, and of each file in the knowledge base its lock
    covers ({path from the root: sha256}), so an edited script is caught as surely as an edited gate; and
    how many times a person relocked it (each relock changes kb.lock, even when the hashes stay: the
    commit that accepts a change made before is then one of kb.lock's history)."""

    sha256: str
    files: dict[str, str] = field(default_factory=dict)
    relocks: int = 0

    def changed_files(self, other: GateLock) -> list[str]:
        """The files whose hash differs between two entries of one gate (added, removed or changed)."""
        return sorted(p for p in set(self.files) | set(other.files) if self.files.get(p) != other.files.get(p))


def parse_lock(text: str | None) -> dict[str, GateLock]:
    """kb.lock -> {gate id: its lock}. Entries without files (a gate that names none, or a lock written
    before kb locked them) read as they always did."""
    if not text:
        return {}
    try:
        data = json_document(text)
        gates = data["gates"]
        return {
            str(k): GateLock(
                str(v["sha256"]),
                {str(p): str(h) for p, h in (v.get("files") or {}).items()},
                int(v.get("relocks") or 0),
            )
            for k, v in gates.items()
        }
    except (Unparsable, KeyError, TypeError, AttributeError, ValueError) as exc:
        raise BadInput(f"kb.lock: not a valid lock file ({exc}); restore it from git") from None


def render_lock(entries: dict[str, GateLock]) -> str:
    gates = {
        k: {
            "sha256": v.sha256,
            **({"files": dict(sorted(v.files.items()))} if v.files else {}),
            **({"relocks": v.relocks} if v.relocks else {}),
        }
        for k, v in sorted(entries.items())
    }
    return json.dumps({"version": LOCK_VERSION, "gates": gates}, indent=2) + "\n"
