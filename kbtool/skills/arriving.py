"""Skills that arrive by an import's records or a sync, held to `kb skill import`'s checks.

There are two doors besides `kb skill import`: the skill-file records of a `.jsonl` import, and a teammate's
commits that `kb sync` would land. A skill is instructions an agent follows with its user's
permissions, so each door holds it to the front door's checks (kbtool.skills.registry.plan_import): the size
limit (kb.toml [limits] skill_bytes) and the security scan, whose high-severity findings refuse it. There is
no --trust here: a skill a person has read and trusts comes in by `kb skill import --trust`.

A skill is judged whole, as it would be once the files land (the files already here with those arriving), so
an unsafe script cannot come in beside a SKILL.md that was clean on its own; the size is measured before
anything is read for the scan. A finding the skill here already has (a person imported it with --trust) is
not the arrival's: kb lint names it (skill-unsafe), and a change elsewhere in the skill still lands."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

import git

from kbtool.skills.registry import folder_files, size_refusal
from kbtool.skills.scan import ScanFinding, refusal, scan_files
from kbtool.store.files import link_out
from kbtool.store.incoming import changes
from kbtool.store.repository import SKILLS_DIR

HINT = "a skill the scan refuses comes in only by `kb skill import --trust`, once a person read it (`kb skill scan`)"


def skill_refusal(name: str, files: Mapping[str, bytes], limit: int, here: Mapping[str, bytes]) -> str | None:
    """Why the skill `name`, whose folder would hold files (by path inside it) where it now holds here, may not
    come in; None when it may."""
    where = f"{SKILLS_DIR}/{name}"
    too_big = size_refusal(sum(len(data) for data in files.values()), limit)
    if too_big:
        return f"{where}: {too_big}"
    known = {_key(f) for f in scan_files(dict(here))} if here else set()
    return refusal(where, [f for f in scan_files(dict(files)) if _key(f) not in known], HINT)


def _key(finding: ScanFinding) -> tuple[str, str, str]:
    """A finding apart from its line, which an edit above it moves."""
    return finding.path, finding.rule, finding.message


def by_skill(paths: Iterable[str]) -> dict[str, list[str]]:
    """The paths under skills/NAME/, by NAME (a path directly in skills/ is no skill's)."""
    out: dict[str, list[str]] = {}
    for rel in paths:
        parts = rel.split("/")
        if parts[0] == SKILLS_DIR and len(parts) >= 3:
            out.setdefault(parts[1], []).append(rel)
    return out


def stream_refusals(root: Path, arriving: Mapping[str, bytes], limit: int) -> list[str]:
    """Why each skill an import's records touch may not come in: its folder here (read, never through a link out
    of the knowledge base) with the arriving files (skills/NAME/FILE: bytes) over it."""
    found = []
    for name, rels in sorted(by_skill(arriving).items()):
        folder = root / SKILLS_DIR / name
        here = folder_files(folder) if folder.is_dir() and link_out(root, folder) is None else {}
        files = {**here, **{rel.split("/", 2)[2]: arriving[rel] for rel in rels}}
        why = skill_refusal(name, files, limit, here)
        if why:
            found.append(why)
    return found


def commit_refusals(repo: git.Repo, old: str, new: str, limit: int) -> list[str]:
    """Why each skill that moving from commit old to commit new adds to or changes may not come in, judged as
    commit new holds it: its files measured from git's tree first, read only when within the limit."""
    touched = by_skill(c.path for c in changes(repo, old, new) if c.status != "D")
    found = []
    for name in sorted(touched):
        entries = _tree(repo, new, name)
        too_big = size_refusal(sum(size for _, _, size in entries), limit)
        if too_big:
            found.append(f"{SKILLS_DIR}/{name}: {too_big}")
            continue
        files, here = _read(repo, entries), _read(repo, _tree(repo, old, name))
        why = skill_refusal(name, files, limit, here)
        if why:
            found.append(why)
    return found


def _tree(repo: git.Repo, commit: str, name: str) -> list[tuple[str, str, int]]:
    """(path inside the folder, blob, size) of each file of skills/NAME/ at commit, from git's tree."""
    prefix = f"{SKILLS_DIR}/{name}/"
    entries = []
    for row in filter(None, repo.git.ls_tree("-r", "-l", "-z", commit, "--", prefix).split("\0")):
        meta, path = row.split("\t", 1)
        _mode, kind, blob, size = meta.split()
        if kind == "blob":
            entries.append((path.removeprefix(prefix), blob, int(size) if size.isdigit() else 0))
    return entries


def _read(repo: git.Repo, entries: list[tuple[str, str, int]]) -> dict[str, bytes]:
    return {path: repo.git.get_object_data(blob)[3] for path, blob, _ in entries}
