"""Whether a gate's newest run judged the candidate as it is now: what `kb brief` shows of the goal and
what the Stop hook enforces.

"Since the candidate last changed", concretely: the candidate is the gate's project (the folder the gate
runs in) as git sees it. Each recorded run holds the project's `repo` state when it ran: its HEAD commit
and whether the tracked files differed from HEAD (`dirty`; untracked files are not counted, as
kbtool.evidence.provenance.repo_state records them). A run still judges the candidate when
- HEAD is the commit the run recorded, and
- the tracked files are unchanged from HEAD now (clean), and were when it ran; or both were changed then
  and now and no changed file was modified after the run's recorded time (mtime, to the second).
Otherwise the candidate changed since: a new commit, edits made after the run, or edits undone. A project
that is not a git repository cannot tell (current None): the newest run's verdict stands there.
"""

from __future__ import annotations

import calendar
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.evidence.provenance import repo_state


@dataclass(frozen=True)
class Candidate:
    """The project as git sees it now: HEAD, and the tracked files that differ from it (with their mtimes;
    a deleted file has none)."""

    commit: str | None  # None: not a git repository
    changed: dict[str, float | None]


def candidate_of(project: Path) -> Candidate:
    state = repo_state(project)
    if state is None:
        return Candidate(None, {})
    changed: dict[str, float | None] = {}
    if state.get("dirty"):
        top = _git(project, "rev-parse", "--show-toplevel") or str(project)
        for name in (_git(project, "diff", "--name-only", "HEAD") or "").splitlines():
            path = Path(top) / name
            changed[name] = path.stat().st_mtime if path.exists() else None
    return Candidate(str(state["commit"]), changed)


def _git(project: Path, *args: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", str(project), *args], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def judged_now(run: dict[str, Any], candidate: Candidate) -> tuple[bool | None, str]:
    """(whether the run judged the candidate as it is now, None when kb cannot tell; why, in a few words)."""
    if candidate.commit is None:
        return None, "the project is not a git repository, so kb cannot tell whether it changed since"
    repo = run.get("repo")
    if not isinstance(repo, dict) or not repo.get("commit"):
        return False, "that run recorded no commit of the project"
    if repo["commit"] != candidate.commit:
        return False, f"the project moved from commit {str(repo['commit'])[:12]} to {candidate.commit[:12]} since"
    was_dirty, dirty = bool(repo.get("dirty")), bool(candidate.changed)
    if not was_dirty and dirty:
        return False, f"{next(iter(candidate.changed))} was edited since (uncommitted)"
    if was_dirty and not dirty:
        return False, "it ran on uncommitted edits that are gone now"
    ran_at = _seconds(run.get("time"))
    for name, mtime in candidate.changed.items():
        if ran_at is None or mtime is None or mtime >= ran_at + 1:  # the record keeps whole seconds
            return False, f"{name} was edited since (uncommitted)"
    return True, f"on commit {candidate.commit[:12]}" + (", with the uncommitted edits there are now" if dirty else "")


def _seconds(stamp: Any) -> float | None:
    """A run's recorded time (2026-12-05T08:00:00Z, UTC) as seconds since the epoch."""
    try:
        return float(calendar.timegm(time.strptime(str(stamp), "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None
