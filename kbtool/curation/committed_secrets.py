"""`kb lint`'s secrets check: credentials already committed, in the tree or a commit message.

Writes are checked as they happen (kbtool/store/secrets.py); this finds what got in before, or by hand. A
credential anywhere in the tree, in a file or as its name, is an error; one in any commit message is a warning,
since only rewriting history removes it. The tree is every tracked file (cards, skills, runs/, kb.toml, notes, ...)
and the cards and skills on disk not yet committed, but the paths kb.toml [curation] secrets_ignore names (code
and tests holding example credentials on purpose). A scan is ~1 ms a KB of text, so what was found in each file is
kept in the state folder by content hash (line and kind, never the value): an unchanged tree is judged once, and
commit messages only from the last commit judged. A change of the rules or of detect-secrets' version scans anew.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import git

from kbtool.model.records import Problem
from kbtool.store import secrets
from kbtool.store.repository import CARDS_DIR, SKILLS_DIR, Store

CACHE_FILE = "secrets-scan.json"
REMEDY = "remove it, rotate it, and purge it from git history"


def committed_secrets(store: Store, ignore: list[str]) -> list[Problem]:
    """A problem (an error) for each credential in a file, and one (a warning) for each in a commit message:
    only rewriting history removes that, so it is said, not failed on forever."""
    cache = _load(store.state_dir / CACHE_FILE)
    found: dict[str, list[list[int | str]]] = {}
    files = _files(store, ignore)
    problems = [  # a key saved as a file's name travels as surely as one inside it
        Problem(rel, "secret", f"its name looks like a credential ({_kinds(named)}); {REMEDY}", _owner(rel))
        for rel, named in secrets.secrets_in_names(files).items()
    ]
    for rel in files:
        path = store.root / rel
        if path.is_symlink() or not path.is_file():  # a link is not followed: it can point anywhere
            continue
        content = path.read_bytes()
        key = f"{secrets.scan_name(rel)}:{hashlib.sha256(content).hexdigest()}"
        if key not in found:
            known = cache["files"].get(key)
            found[key] = (
                known if known is not None else [[s.line, s.kind] for s in secrets.secrets_in_file(rel, content)]
            )
        problems += [
            Problem(
                rel,
                "secret",
                f"looks like a credential ({secrets.Secret(int(line), str(kind))}); {REMEDY}",
                _owner(rel),
            )
            for line, kind in found[key]
        ]
    head, messages = _messages(store, cache)
    _save(store.state_dir / CACHE_FILE, {"rules": _rules(), "files": found, "head": head, "messages": messages})
    return problems + [
        Problem(
            f"commit {sha[:12]}",
            "secret",
            f"its message looks like a credential ({kind} at line {line}); rotate it (only rewriting history "
            "removes it)",
            severity="warning",
        )
        for sha, line, kind in messages
    ]


def _kinds(found: list[secrets.Secret]) -> str:
    return ", ".join(dict.fromkeys(s.kind for s in found))


def _files(store: Store, ignore: list[str]) -> list[str]:
    tracked = store.repo.git.ls_files("-z").split("\0") if store.head() else []
    on_disk = [store.relative(p) for folder in (CARDS_DIR, SKILLS_DIR) for p in (store.root / folder).rglob("*")]
    paths = {rel for rel in (*tracked, *on_disk) if rel}
    return sorted(rel for rel in paths if not any(fnmatchcase(rel, pattern) for pattern in ignore))


def _owner(rel: str) -> str | None:
    """The card (kb/<kind>/<id>.md) or skill (skills/<name>/...) a file is part of."""
    parts = rel.split("/")
    if parts[0] == CARDS_DIR and len(parts) == 3 and parts[2].endswith(".md"):
        return parts[2][:-3]
    return parts[1] if parts[0] == SKILLS_DIR and len(parts) > 2 else None


def _messages(store: Store, cache: dict[str, Any]) -> tuple[str | None, list[list[Any]]]:
    """(HEAD, [sha, line, kind] of each credential in a commit message): the commits since the last HEAD
    judged, when it is an ancestor of this one, else all of them."""
    head = store.head()
    if head is None:
        return None, []
    since, earlier = cache["head"], cache["messages"]
    if since and since != head and store.is_commit(since) and _is_ancestor(store, since, head):
        revisions = [f"{since}..{head}"]
    elif since == head:
        return head, earlier
    else:
        revisions, earlier = [head], []
    log = store.repo.git.log(*revisions, "--format=%H%x1f%B%x1e")
    found: list[list[Any]] = []
    for record in log.split("\x1e"):
        sha, _, message = record.strip("\n").partition("\x1f")
        found += [[sha, s.line, s.kind] for s in (secrets.find_secrets(message, "message.txt") if sha else [])]
    return head, found + earlier


def _is_ancestor(store: Store, older: str, newer: str) -> bool:
    try:
        store.repo.git.merge_base("--is-ancestor", older, newer)
    except git.GitCommandError:
        return False
    return True


def _rules() -> str:
    """What the cached findings were found by: the rules' own source and detect-secrets' version."""
    from detect_secrets.__version__ import VERSION

    source = Path(secrets.__file__).read_bytes()
    return hashlib.sha256(source + VERSION.encode()).hexdigest()


def _load(path: Path) -> dict[str, Any]:
    """The cache, if it was made by these rules and has its shape (a hand-edited one is scanned anew)."""
    empty: dict[str, Any] = {"files": {}, "head": None, "messages": []}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return empty
    if not isinstance(data, dict) or data.get("rules") != _rules():
        return empty
    files, messages, head = data.get("files"), data.get("messages"), data.get("head")
    shaped = (
        isinstance(files, dict)
        and all(isinstance(found, list) and all(_is_finding(f, 2) for f in found) for found in files.values())
        and isinstance(messages, list)
        and all(_is_finding(f, 3) for f in messages)
        and (head is None or isinstance(head, str))
    )
    return {"files": files, "head": head, "messages": messages} if shaped else empty


def _is_finding(item: object, size: int) -> bool:
    """[line, kind] (size 2) or [sha, line, kind] (size 3)."""
    return (
        isinstance(item, list)
        and len(item) == size
        and isinstance(item[-2], int)
        and isinstance(item[-1], str)
        and all(isinstance(x, str) for x in item[: size - 2])
    )


def _save(path: Path, data: dict[str, Any]) -> None:
    """Atomically, and best effort: a cache that cannot be written only costs the next lint its time."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError:
        return
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
