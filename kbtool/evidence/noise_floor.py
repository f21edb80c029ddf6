"""A noise floor from the knowledge base's repeated runs, for a change with one run a side.

With one run a side there is no spread between runs to judge a change by, but the knowledge base may already hold
repeated runs of one configuration (an A/A finding: `kb add-finding --from R1 --from R2 --from R3`). Their
run-to-run spread, as a fraction of the mean, says about how many runs a side would judge a change of the size
seen, naming the finding (kbtool/evidence/verdicts.py). It is never a verdict's interval: measured on real H100
runs, a few runs' spread misses the outlier run, and taken for a single run it called identical runs different.

Only runs that are plainly the same experiment qualify: the same metric and unit, the same benchmark format,
one load (kbtool.evidence.load), the same serving backend and model where both name one, from a finding that
still stands (confirmed or tentative). Where several qualify, the widest spread is taken: a floor that is too
low would promise a verdict from too few runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from kbtool.evidence.formats import load_keys_of
from kbtool.evidence.load import difference
from kbtool.evidence.verdicts import NoiseFloor, noise_floor_of

STANDING = ("confirmed", "tentative")
Entry = dict[str, Any]


def _model(applies_to: Any) -> str | None:
    model = (applies_to or {}).get("model") if isinstance(applies_to, dict) else None
    return str(model).casefold() if isinstance(model, str) else None


def _agrees(ours: Any, theirs: Any) -> bool:
    return ours is None or theirs is None or str(ours).casefold() == str(theirs).casefold()


def noise_floors(
    findings: Iterable[tuple[str, dict[str, Any]]], model: str | None
) -> Callable[[Entry], NoiseFloor | None]:
    """findings: (id, frontmatter) of the knowledge base's findings; model: the compared runs' model, when their
    exports name one. Returns the noise floor for an entry to be judged, or None when nothing qualifies."""
    held: list[tuple[Entry, NoiseFloor]] = []
    for card_id, data in findings:
        if data.get("status") not in STANDING or not _agrees(model, _model(data.get("applies_to"))):
            continue
        for ev in data.get("evidence") or []:
            floor = noise_floor_of(ev, card_id) if isinstance(ev, dict) else None
            if floor is not None:
                held.append((ev, floor))

    def floor_for(entry: Entry) -> NoiseFloor | None:
        ours = entry.get("conditions") or {}
        found = [
            floor
            for ev, floor in held
            if ev.get("metric") == entry.get("metric")
            and ev.get("unit") == entry.get("unit")
            and (ev.get("conditions") or {}).get("format") == ours.get("format")
            and _agrees((ev.get("conditions") or {}).get("backend"), ours.get("backend"))
            and difference(ours, ev.get("conditions") or {}, (), load_keys_of) is None
        ]
        return max(found, key=lambda f: f.cv) if found else None

    return floor_for
