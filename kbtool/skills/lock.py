"""The lock file of installed skills: what was installed, from where, and its hash.

For each skill `kb skill install` put in a skills folder: where it came from (a knowledge base, a folder,
kbtool itself, or a git repository at a ref and commit), and the SHA-256 of its folder as installed (every
file's path, executable bit and content), so `kb skill verify` can tell an installed skill from one changed
(or swapped) since. Fields a later kb wrote are kept as they are.

It lives in the skills folder itself (`.agents/skills/kb-skills-lock.json`): agents read only the
folders holding a SKILL.md there, and the lock travels with the folder it describes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput
from kbtool.model.parsing import json_document

LOCK_FILE = "kb-skills-lock.json"
LOCK_VERSION = 1
IGNORED = (".git", "__pycache__")  # neither copied by an install nor counted in a folder's digest


def folder_digest(folder: Path) -> str:
    """SHA-256 over every file's path, executable bit and content (symlinks by their target), in path
    order: the same folder gives the same digest on any machine, and any change gives another."""
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if any(part in IGNORED for part in path.relative_to(folder).parts):
            continue
        if path.is_symlink():
            digest.update(f"link {rel} -> {os.readlink(path)}\n".encode())
        elif path.is_file():
            mode = "x" if path.stat().st_mode & stat.S_IXUSR else "-"
            digest.update(f"file {rel} {mode} {hashlib.sha256(path.read_bytes()).hexdigest()}\n".encode())
    return "sha256:" + digest.hexdigest()


@dataclass
class Locked:
    """One installed skill. source is what was asked for (a path, a git URL, `kb:NAME`, `kbtool:kb`);
    kind says which; ref and commit only for git; subdir is the skill's folder inside its source."""

    name: str
    kind: str  # "kb" (a skill of a knowledge base), "folder", "git", "bundled" (kbtool's own kb skill)
    source: str
    sha256: str
    ref: str | None = None
    commit: str | None = None
    subdir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)  # fields a later kb wrote, kept as they are

    def to_json(self) -> dict[str, Any]:
        data = {k: v for k, v in asdict(self).items() if v is not None and k not in ("name", "extra")}
        return {**self.extra, **data}

    @classmethod
    def from_json(cls, name: str, data: dict[str, Any]) -> Locked:
        known = {"kind", "source", "sha256", "ref", "commit", "subdir"}
        try:
            return cls(
                name=name,
                **{k: data[k] for k in known if k in data},
                extra={k: v for k, v in data.items() if k not in known},
            )
        except TypeError:
            raise BadInput(f"{LOCK_FILE}: the entry for {name} lacks kind, source or sha256") from None


class Lock:
    """The lock file of one skills folder, read whole and written whole (atomically)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.path = folder / LOCK_FILE
        self.skills: dict[str, Locked] = {}
        if self.path.is_file():
            try:
                data = json_document(self.path.read_text(encoding="utf-8"))
                entries = data["skills"]
                if not isinstance(entries, dict):
                    raise TypeError
            except (ValueError, KeyError, TypeError):
                raise BadInput(f"{self.path}: not a kb skills lock file (JSON with a skills object)") from None
            self.skills = {name: Locked.from_json(name, entry) for name, entry in sorted(entries.items())}

    def text(self) -> str | None:
        """The lock file's text; None when it names no skill (and so is not kept)."""
        if not self.skills:
            return None
        data = {"version": LOCK_VERSION, "skills": {n: s.to_json() for n, s in sorted(self.skills.items())}}
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
