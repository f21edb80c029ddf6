"""The skill registry's file work: what `kb skill new / import / export / pack` write.

Pure planning where possible: each function returns the files to write (relative to the
KB root; None deletes) and the facade commits them in one go, so a failed check writes
nothing. Skill files are copied byte for byte, scripts keep their executable bit.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput, Conflict, OutsidePath
from kbtool.skills.scan import at_least, scan_skill
from kbtool.skills.spec import (
    SKILL_FILE,
    InvalidSkill,
    Skill,
    frontmatter_violations,
    load_skill,
    render_skill,
    skill_folders,
)
from kbtool.store.atomic_files import Executable
from kbtool.store.files import LinkOut, link_out, links_in, points_outside
from kbtool.store.repository import SKILLS_DIR

NEW_BODY = """# {title}

## When to use

## Steps

1.

## Checks

## Sources
"""


@dataclass(frozen=True)
class Rejected:
    path: str
    violations: list[str]


def _skill_files(folder: Path) -> list[tuple[str, Path]]:
    """(posix path inside the folder, path) of every file of a skill; hidden files and caches left out."""
    out = []
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder)
        if path.is_file() and not any(p.startswith(".") or p == "__pycache__" for p in rel.parts):
            out.append((rel.as_posix(), path))
    return out


def folder_files(folder: Path) -> dict[str, bytes]:
    """Every file of a skill folder, by posix path inside it."""
    return {
        rel: Executable(path.read_bytes()) if os.access(path, os.X_OK) else path.read_bytes()
        for rel, path in _skill_files(folder)
    }


def too_big(folder: Path, limit: int) -> str | None:
    """Why a skill folder is refused for its size (its files measured, none read), or None."""
    return size_refusal(sum(path.stat().st_size for _, path in _skill_files(folder)), limit)


def size_refusal(size: int, limit: int) -> str | None:
    """Why a skill whose files hold size bytes is refused, or None: the one limit every way in applies."""
    if size <= limit:
        return None
    return (
        f"its files hold {size:,} bytes, over the skill limit of {limit:,} (kb.toml [limits] skill_bytes); "
        "a skill travels through git to every clone: keep large data out of it"
    )


def replace_folder(root: Path, name: str, files: dict[str, bytes]) -> dict[str, bytes | None]:
    """The writes that make skills/<name>/ hold exactly these files (others in it are deleted); refused
    when skills/<name>, skills/ or a file in the folder is a symbolic link out of the knowledge base
    (root, resolved): what is there is compared and replaced, and none of it is read through a link."""
    target = root / SKILLS_DIR / name
    linked = link_out(root, target)
    if linked is None and target.is_dir():
        inner = [rel for rel, _ in links_in(target) if points_outside(root, target / rel)]
        linked = LinkOut(target / inner[0], os.readlink(target / inner[0])) if inner else None
    if linked is not None:
        shown = linked.path.relative_to(root).as_posix()
        raise OutsidePath(f"{linked.says(shown)}; kb neither reads nor writes through it, so nothing was written")
    writes: dict[str, bytes | None] = {}
    current = folder_files(target) if target.is_dir() else {}
    for rel, content in files.items():
        old = current.get(rel)
        if old is None or old != content or isinstance(old, Executable) != isinstance(content, Executable):
            writes[f"{SKILLS_DIR}/{name}/{rel}"] = content
    for rel in current.keys() - files.keys():
        writes[f"{SKILLS_DIR}/{name}/{rel}"] = None
    return writes


def skill_sources(path: Path, skipped: Callable[[LinkOut], None] | None = None) -> list[Path]:
    """A skill folder itself, or the skill folders (holding a SKILL.md) directly inside path; one that
    is a symbolic link out of path is left out, unread, and handed to skipped."""
    if not path.exists():
        raise BadInput(f"{path}: no such file or folder")
    if not path.is_dir():
        raise BadInput(f"{path}: give a skill folder (with {SKILL_FILE}) or a folder of them")
    if (path / SKILL_FILE).exists():
        return [path]
    links: list[LinkOut] = []
    found = skill_folders(path.resolve(), path.resolve(), links.append)
    for found_link in links:
        if skipped is not None:
            skipped(found_link)
    if not found and not links:
        raise BadInput(f"{path}: no {SKILL_FILE} in it or in any folder directly inside it")
    return [path / folder.name for folder in found]


def plan_import(
    root: Path, path: Path, max_bytes: int, trust: bool = False
) -> tuple[dict[str, bytes | None], list[str], list[str], list[Rejected]]:
    """(writes, added, updated, rejected) of importing path; unchanged skills appear in neither list.
    A skill whose files hold more than max_bytes is rejected before any is read; one the security scan
    finds high-severity issues in, unless trust."""
    writes: dict[str, bytes | None] = {}
    added: list[str] = []
    updated: list[str] = []
    rejected: list[Rejected] = []
    links: list[LinkOut] = []
    folders = skill_sources(path, links.append)
    for found in links:  # `incoming/s -> ~/.ssh`: nothing of it is read
        why = f"{found.what('the folder given')}; kb copies no file from outside it"
        rejected.append(Rejected(str(path / found.path.name), [why]))
    for folder in folders:
        try:
            skill = load_skill(folder, str(folder))
        except InvalidSkill as exc:
            rejected.append(Rejected(str(folder), exc.violations))
            continue
        size_problem = too_big(folder, max_bytes)
        if size_problem:
            rejected.append(Rejected(str(folder), [size_problem]))
            continue
        high = at_least(scan_skill(folder), "high")
        if high and not trust:
            hint = "security scan (read it with `kb skill scan`; --trust imports it anyway): "
            rejected.append(Rejected(str(folder), [hint + f.text() for f in high]))
            continue
        changes = replace_folder(root, skill.name, folder_files(folder))
        if changes:
            (updated if (root / SKILLS_DIR / skill.name / SKILL_FILE).exists() else added).append(skill.name)
            writes.update(changes)
    return writes, added, updated, rejected


def new_skill_text(
    name: str, description: str, license: str | None = None, compatibility: str | None = None, body: str | None = None
) -> str:
    data: dict[str, Any] = {"name": name, "description": description}
    if license is not None:
        data["license"] = license
    if compatibility is not None:
        data["compatibility"] = compatibility
    problems = frontmatter_violations(data, name)
    if problems:
        raise InvalidSkill(f"skill {name}", problems)
    skill = Skill(
        name=name,
        description=description,
        license=license,
        compatibility=compatibility,
        path="",
        body=body if body is not None else NEW_BODY.format(title=name.replace("-", " ").capitalize()),
    )
    return render_skill(skill)


def export(skill_folder: Path, name: str, to: Path) -> Path:
    """Copy a skill to to/<name>/, replacing an earlier export of it; the swap is a rename, so an
    agent reading to/<name> sees the old skill or the new one."""
    target = to / name
    if to.exists() and not to.is_dir():
        raise Conflict(f"--to {to}: a file, not a folder to export skills into")
    if target.exists() and not (target / SKILL_FILE).exists() and any(target.iterdir()):
        raise Conflict(f"{target} exists and is not a skill; not overwriting it")
    to.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=to))
    try:
        shutil.copytree(skill_folder, staging / name, ignore=shutil.ignore_patterns(".*", "__pycache__"))
        if target.exists():
            target.rename(staging / "old")  # removed with the staging folder below
        (staging / name).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target
