"""One run is one measurement: never compared with itself, never counted twice.

`kb compare RUN RUN`, `kb add-finding --from X --baseline-from X` and their MCP tools judged a run against
itself: every change zero, a verdict of "no clear change" that then closed a gap. And `--from X --from X`
made one run pass for two repeated runs, its spread zero. Two exports are one run when they share any part
of a run's identity (kbtool.evidence.runs): a file's sha256 (a copy), the measurements it holds (a copy
written out again: kbtool.evidence.formats.reader.same_content), or the run id its tool records (AIPerf's
benchmark id, GuideLLM's benchmark id). Such a request is refused in one line naming both, before anything
is judged or written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kbtool.model.errors import BadInput

Run = Mapping[str, Any]  # a run as kbtool.evidence.runs reads it: its name and its identity (key -> what it says)


def refuse_same_runs(candidate: Sequence[Run], baseline: Sequence[Run], flags: tuple[str, str] = ("", "")) -> None:
    """BadInput naming the first two runs that are one run: two of one side (a run given twice), or one of each
    side (a run against itself). `flags` prefix each side's names as the request gave them (--from, ...)."""
    for side, flag in ((candidate, flags[0]), (baseline, flags[1])):
        for n, run in enumerate(side):
            for other in side[n + 1 :]:
                why = _shared(run, other)
                if why:
                    raise BadInput(
                        f"{flag}{run['name']} and {flag}{other['name']} are one run ({why}): given twice it would "
                        "pass for two repeated runs; give each run once"
                    )
    for run in candidate:
        for other in baseline:
            why = _shared(run, other)
            if why:
                raise BadInput(
                    f"{flags[0]}{run['name']} and {flags[1]}{other['name']} are one run ({why}): a run compared "
                    "with itself shows no change, whatever it measured; compare each side's own runs"
                )


def _shared(run: Run, other: Run) -> str | None:
    """What makes two runs one, said as the strongest reason (a run id before a digest), or None."""
    ours, theirs = run.get("identity") or {}, other.get("identity") or {}
    shared = [key for key in ours if key in theirs]
    if not shared:
        return None
    order = ("finding:", "aiperf:", "guidellm:", "sha256:", "content:")
    shared.sort(key=lambda key: next((n for n, prefix in enumerate(order) if key.startswith(prefix)), len(order)))
    return str(ours[shared[0]])
