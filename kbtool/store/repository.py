"""The git-backed store: files under the KB root, each write one commit.

A write is: take the KB's file lock, write every file to a temp file and rename it into
place, `git add` and `git commit` exactly those paths. If git refuses, the files are put
back as they were, so a failed write leaves neither a half-written card nor a staged one.
The lock (in the ignored .kb/ folder) serialises writers across processes: id allocation,
file writes and commits happen under it, so concurrent writers all land.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
from filelock import FileLock, Timeout

from ..model.errors import KbError, OutsidePath
from ..model.vocabulary import CONFIG_FILE, STATE_DIR
from .config import default_config_text

CARDS_DIR = "kb"
SKILLS_DIR = "skills"
LOCK_FILE = "kb.lock"
GITIGNORE = ".kb/\n__pycache__/\n"
LOCK_TIMEOUT_S = 120


class StoreError(KbError):
    """git refused a write; the files were restored."""

    exit_code = 1


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    author: str
    subject: str
    message: str


class Store:
    def __init__(self, root: Path):
        self.root = root.resolve()
        self._repo: git.Repo | None = None

    # --- paths -----------------------------------------------------------------

    def inside(self, path: Path | str) -> Path:
        """The absolute path, refusing anything that escapes the KB root."""
        full = (self.root / path).resolve()
        if full != self.root and self.root not in full.parents:
            raise OutsidePath(f"{path}: outside the knowledge base at {self.root}")
        return full

    def relative(self, path: Path) -> str:
        try:  # the common case, paths kb built from its root: no filesystem calls
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.resolve().relative_to(self.root).as_posix()

    def card_path(self, kind: str, card_id: str) -> Path:
        return self.inside(Path(CARDS_DIR) / kind / f"{card_id}.md")

    def card_files(self) -> list[Path]:
        """kb/<kind>/<id>.md, sorted."""
        return [self.root / rel for rel in self.card_paths()]

    def card_paths(self) -> list[str]:
        """The card files' paths relative to the root ("kb/<kind>/<id>.md"), sorted: scandir and plain
        strings, because a warm process lists a 100k-card KB after each write (Path objects: 0.7 s)."""
        cards = self.root / CARDS_DIR
        out: list[str] = []
        try:
            kinds = sorted(e.name for e in os.scandir(cards) if e.is_dir() and not e.name.startswith("."))
        except FileNotFoundError:
            return []
        for kind in kinds:
            names = sorted(
                e.name
                for e in os.scandir(cards / kind)
                if e.name.endswith(".md") and not e.name.startswith(".") and e.is_file()
            )
            out.extend(f"{CARDS_DIR}/{kind}/{name}" for name in names)
        return out

    def card_file(self, card_id: str) -> Path | None:
        """kb/<kind>/<card_id>.md in whichever kind's folder holds it, by stat, or None."""
        if not card_id or "/" in card_id or card_id.startswith("."):
            return None
        cards = self.root / CARDS_DIR
        try:
            kinds = sorted(e.name for e in os.scandir(cards) if e.is_dir() and not e.name.startswith("."))
        except FileNotFoundError:
            return None
        return next((path for kind in kinds if (path := cards / kind / f"{card_id}.md").is_file()), None)

    @property
    def state_dir(self) -> Path:
        path = self.root / STATE_DIR
        path.mkdir(exist_ok=True)
        return path

    # --- git -------------------------------------------------------------------

    @property
    def repo(self) -> git.Repo:
        if self._repo is None:
            try:
                self._repo = git.Repo(self.root)
            except (git.InvalidGitRepositoryError, git.NoSuchPathError):
                raise StoreError(
                    f"{self.root}: not a git repository; a knowledge base lives in one (kb init)"
                ) from None
            self._repo.git.update_environment(**_identity_env(self._repo))
        return self._repo

    @classmethod
    def init(cls, root: Path, name: str) -> Store:
        root = root.resolve()
        if (root / CONFIG_FILE).exists():
            raise OutsidePath(f"{root}: already a knowledge base ({CONFIG_FILE} exists)")
        root.mkdir(parents=True, exist_ok=True)
        try:
            git.Repo(root, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            git.Repo.init(root)
        store = cls(root)
        files = {CONFIG_FILE: default_config_text(name)}
        gitignore = root / ".gitignore"
        if not gitignore.exists():
            files[".gitignore"] = GITIGNORE
        elif ".kb/" not in gitignore.read_text(encoding="utf-8").split():
            files[".gitignore"] = gitignore.read_text(encoding="utf-8").rstrip("\n") + "\n" + GITIGNORE
        store.write(files, f"kb init: {name}\n\nkb-op: init")
        return store

    @contextmanager
    def lock(self) -> Iterator[None]:
        try:
            with FileLock(str(self.state_dir / "write.lock"), timeout=LOCK_TIMEOUT_S):
                yield
        except Timeout:
            raise StoreError(f"another kb process has held the write lock for {LOCK_TIMEOUT_S} s; try again") from None

    def write(self, files: Mapping[str, str | bytes | None], message: str) -> str:
        """Write (or, for None, delete) files relative to the root in one commit; returns its sha.

        Call it under `lock()` when the content depends on what is already there.
        """
        paths = {rel: self.inside(rel) for rel in files}
        before = {rel: (p.read_bytes() if p.exists() else None) for rel, p in paths.items()}
        new_dirs = _missing_dirs(paths.values(), self.root)
        try:
            for rel, text in files.items():
                _replace(paths[rel], text)
            self.repo.git.add("--all", "--", *files)
            self.repo.git.commit("--quiet", "-m", message, "--", *files)
        except (git.GitCommandError, OSError) as exc:
            self._restore(paths, before, new_dirs)
            detail = getattr(exc, "stderr", "") or str(exc)
            raise StoreError(
                f"git refused the write ({' '.join(str(detail).split())[:300]}); nothing was changed"
            ) from None
        return self.repo.head.commit.hexsha

    def _restore(self, paths: Mapping[str, Path], before: Mapping[str, bytes | None], new_dirs: list[Path]) -> None:
        for rel, content in before.items():
            path = paths[rel]
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)
        for directory in new_dirs:  # deepest first
            try:
                directory.rmdir()
            except OSError:
                pass  # not empty: something else lives there now
        try:
            self.repo.git.reset("--quiet", "--", *paths)
        except git.GitCommandError:
            pass  # nothing staged yet (or no HEAD): the working tree is already restored

    def history(self, rel: str) -> list[Commit]:
        fmt = "%H%x1f%aI%x1f%an%x1f%s%x1f%B%x1e"
        try:
            out = self.repo.git.log("--follow", f"--format={fmt}", "--", rel)
        except git.GitCommandError:
            return []
        commits = []
        for record in out.split("\x1e"):
            record = record.strip("\n")
            if record:
                sha, date, author, subject, message = record.split("\x1f")
                commits.append(Commit(sha, date, author, subject, message.strip()))
        return commits


def _missing_dirs(paths: Iterable[Path], root: Path) -> list[Path]:
    """Folders a write will create, deepest first, so a rollback can remove them again."""
    missing: set[Path] = set()
    for path in paths:
        for parent in path.parents:
            if parent == root or parent.exists():
                break
            missing.add(parent)
    return sorted(missing, key=lambda p: len(p.parts), reverse=True)


class Executable(bytes):
    """File content to be written with the executable bit (a skill's scripts keep theirs)."""


def _replace(path: Path, content: str | bytes | None) -> None:
    """Atomic: readers see the old file or the new one, never a part of it. Bytes are written as given
    (a skill's scripts and assets), text as UTF-8 with \n line ends."""
    if content is None:
        path.unlink(missing_ok=True)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        data = content if isinstance(content, bytes) else content.encode("utf-8")  # newlines as given: \n
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        # mkstemp makes 0600; a file in a shared repository should read like any checkout
        os.chmod(tmp, 0o755 if isinstance(content, Executable) else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _identity_env(repo: git.Repo) -> dict[str, str]:
    """Commits need an author; where git has none configured, kb signs as itself."""
    reader = repo.config_reader()
    env: dict[str, str] = {}
    if not os.environ.get("GIT_AUTHOR_NAME") and not reader.get_value("user", "name", default=""):
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "kb"
    if not os.environ.get("GIT_AUTHOR_EMAIL") and not reader.get_value("user", "email", default=""):
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "kb@localhost"
    return env


def author_name(store: Store) -> str | None:
    name = os.environ.get("GIT_AUTHOR_NAME") or store.repo.config_reader().get_value("user", "name", default="")
    return str(name) or os.environ.get("USER") or None
