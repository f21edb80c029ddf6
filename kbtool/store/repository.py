"""The git-backed store: files under the KB root, each write one commit.

A write is: take the KB's file lock, write every file to a temp file and rename it into
place, `git add` and `git commit` exactly those paths. If git refuses, the files are put
back as they were, so a failed write leaves neither a half-written card nor a staged one.
The lock (in the ignored .kb/ folder) serialises writers across processes: id allocation,
file writes and commits happen under it, so concurrent writers all land.

A writer can also die mid-write (kill -9, a power cut): before it touches a file it records, in
.kb/write-journal.json, what each path held and which commit HEAD was. The next process that
holds the lock (any writer; a reader when no writer is running) finds the journal: if HEAD has
not moved, the write never committed, so its paths are put back as they were and git's own lock,
left by the killed commit, is removed; if HEAD moved, the commit landed and only the journal goes.
Either way the temp files the killed write left go too. Ctrl-C and SIGTERM are not deaths: before
the commit they put the files back at once, and once the commit has begun they wait for it
(store/interrupts.py), so a git commit never finishes behind a write that was rolled back. A card
is on disk only if it is committed, or its writer is still live. Sync's fast-forward is the same
journaled change, and its merge worktree is journaled too, so a killed sync leaves no worktree
that breaks `git fsck` and `git fetch`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import git
from filelock import FileLock, Timeout

from kbtool.model.errors import AmbiguousId, Conflict, KbError, OutsidePath, ReadOnly
from kbtool.model.vocabulary import CONFIG_FILE, STATE_DIR
from kbtool.store import git_log, lock_holder
from kbtool.store.atomic_files import missing_dirs, remove_temp_files, replace_file
from kbtool.store.commits import commit_message
from kbtool.store.config import default_config_text
from kbtool.store.files import LinkOut, leads_out, link_out
from kbtool.store.git_identity import NO_IDENTITY, identity_env
from kbtool.store.git_log import Commit
from kbtool.store.interrupts import deferred
from kbtool.store.locate import state_dir
from kbtool.store.secrets import check_write

CARDS_DIR = "kb"
SKILLS_DIR = "skills"
LOCK_FILE = "kb.lock"
GITIGNORE = ".kb/\n__pycache__/\n"
LOCK_TIMEOUT_S = 120
LEFT_OUT = "; left out (kb lint names it)"  # how the note on a link out of the knowledge base ends
JOURNAL = "write-journal.json"  # in .kb/: the write in flight, until it commits or is rolled back
JOURNAL_TEMP = f".{JOURNAL}.tmp"  # the journal being written (one name: only the lock's holder writes it)
WORKTREE_PREFIX = "sync-"  # in .kb/: the worktree a sync merges in (store/sync.py), named sync-PID
LIVE_GIT_S = 2.0  # an index.lock younger than this may be a live git's (one a killed writer started)


class StoreError(KbError):
    """git refused a write; the files were restored."""

    exit_code = 1


@dataclass(frozen=True)
class _Journal:
    """A change in flight: the commit HEAD was before it, and what each path it changes held (None: absent)."""

    head: str | None
    files: dict[str, bytes | None]
    new_dirs: list[str]  # folders it creates, deepest first

    def to_json(self) -> str:
        encoded = {rel: (None if b is None else base64.b64encode(b).decode()) for rel, b in self.files.items()}
        return json.dumps({"head": self.head, "files": encoded, "new_dirs": self.new_dirs})

    @classmethod
    def from_json(cls, text: str) -> _Journal:
        data = json.loads(text)
        files = {rel: (None if b is None else base64.b64decode(b)) for rel, b in data["files"].items()}
        return cls(data["head"], files, list(data["new_dirs"]))


class Store:
    def __init__(self, root: Path, note: Callable[[str], None] | None = None):
        self.root = root.resolve()
        self._note = note  # how a write tells its caller something worth saying (kb signs as itself)
        self.signs_as_kb = False  # git has no identity here: commits are signed kb <kb@localhost>
        self._repo: git.Repo | None = None
        self._file_lock: FileLock | None = None
        self._state_dir: Path | None = None
        # a write whose text looks like a credential is refused unless a person says it is not one
        # (the CLI's --allow-secret); nothing an agent calls over MCP can set it
        self.allow_secrets = False
        # how the surface writing lets a person say so, for the refusal to offer ("pass --allow-secret");
        # None where there is no way, so a refusal over MCP offers nothing MCP does not have
        self.credential_override: str | None = None
        self.card_links_out: list[LinkOut] = []  # found by the last card_paths(): left out, kb lint names them

    # --- paths -----------------------------------------------------------------

    def inside(self, path: Path | str) -> Path:
        """The absolute path, refusing anything that escapes the KB root, or leads into a .git folder (git's
        own: its hooks run on the next commit), as written or through a link."""
        full = (self.root / path).resolve()
        if full != self.root and self.root not in full.parents:
            written = Path(os.path.normpath(self.root / path))
            linked = link_out(self.root, written) if written.is_relative_to(self.root) else None
            if linked is not None:
                raise OutsidePath(f"{self.refusal(linked)}; nothing was written")
            raise OutsidePath(f"{path}: outside the knowledge base at {self.root}")
        if any(part.lower() == ".git" for part in (*Path(path).parts, *full.relative_to(self.root).parts)):
            raise OutsidePath(f"{path}: in a .git folder, which is git's own; nothing was written")
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
        strings, because a warm process lists a 100k-card KB after each write (Path objects: 0.7 s).
        A dead writer's half-done write is undone first, so no reader counts a card that never committed.
        A link leading out of the knowledge base (a card file, a kind's folder, kb/ itself) is left out and
        named (a note; kb lint's symlink-out): is_symlink() comes with scandir, so this costs nothing more."""
        self.recover_if_interrupted()
        cards = self.root / CARDS_DIR
        out: list[str] = []
        self.card_links_out = []
        if self._left_out(cards):
            return []
        try:
            kinds = sorted(
                e.name for e in os.scandir(cards) if e.is_dir() and not e.name.startswith(".") and not self._left_out(e)
            )
        except FileNotFoundError:
            return []
        for kind in kinds:
            names = sorted(
                e.name
                for e in os.scandir(cards / kind)
                if e.name.endswith(".md")
                and not e.name.startswith(".")
                and e.is_file()
                and not (e.is_symlink() and self._left_out(e))  # is_symlink: from scandir, no system call
            )
            out.extend(f"{CARDS_DIR}/{kind}/{name}" for name in names)
        return out

    def _left_out(self, entry: os.DirEntry[str] | Path) -> bool:
        """Whether a card listing leaves this entry out, a link out of the knowledge base (noted once)."""
        if not entry.is_symlink() or not leads_out(self.root, Path(entry)):
            return False
        found = LinkOut(Path(entry), os.readlink(entry))
        self.card_links_out.append(found)
        self.skipped(found)
        return True

    def skipped(self, link: LinkOut) -> None:
        """Say that a read left a link out, once per process."""
        said = f"{link.says(self.relative(link.path))}{LEFT_OUT}"
        if self._note is not None:  # the facade's: said once
            self._note(said)

    def refusal(self, link: LinkOut) -> str:
        """What a read or write through a link out of the knowledge base is refused with."""
        return f"{link.says(self.relative(link.path))}; kb neither reads nor writes through it"

    def card_file(self, card_id: str) -> Path | None:
        """kb/<kind>/<card_id>.md in whichever kind's folder holds it, by stat, or None. An id in two
        kinds' folders (a hand copy, a merge) is refused rather than one of them picked."""
        if not card_id or "/" in card_id or "\\" in card_id or card_id.startswith("."):
            return None
        cards = self.root / CARDS_DIR
        try:
            kinds = sorted(e.name for e in os.scandir(cards) if e.is_dir() and not e.name.startswith("."))
        except FileNotFoundError:
            return None
        found = [path for kind in kinds if is_file(path := cards / kind / f"{card_id}.md")]
        if len(found) > 1:
            where = " and ".join(self.relative(p) for p in found)
            raise AmbiguousId(f"id {card_id!r} is in {where}; keep one (kb lint reports it as duplicate-id)")
        linked = link_out(self.root, found[0]) if found else None
        if linked is not None:
            raise OutsidePath(self.refusal(linked))
        return found[0] if found else None

    @property
    def state_dir(self) -> Path:
        """.kb/, or this user's cache for a knowledge base that cannot be written (store/locate.py)."""
        if self._state_dir is None:
            self._state_dir = state_dir(self.root)
        return self._state_dir

    @property
    def writable(self) -> bool:
        try:
            self.require_writable()
        except ReadOnly:
            return False
        return True

    def require_writable(self) -> None:
        """ReadOnly, in one line, before a write touches anything, instead of an OSError halfway."""
        local = self.root / STATE_DIR
        if self.state_dir == local and os.access(self.root, os.W_OK):
            return
        if local.exists() and not local.is_dir():
            raise ReadOnly(f"{local}: not a folder; kb keeps its index and locks there, so remove it")
        try:
            mounted_read_only = bool(os.statvfs(self.root).f_flag & os.ST_RDONLY)
        except OSError:
            mounted_read_only = False
        why = "a read-only file system" if mounted_read_only else "this user may not write it"
        raise ReadOnly(f"{self.root}: read-only ({why}); nothing was written (reading, search and lint still work)")

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
            fallback = identity_env(self._repo)
            self._repo.git.update_environment(**fallback)
            self.signs_as_kb = bool(fallback)
        return self._repo

    @classmethod
    def init(cls, root: Path, name: str) -> Store:
        root = root.resolve()
        if (root / CONFIG_FILE).exists():
            raise OutsidePath(f"{root}: already a knowledge base ({CONFIG_FILE} exists)")
        root.mkdir(parents=True, exist_ok=True)
        store = cls(root)
        store.require_writable()  # a .kb that is a link, a read-only folder: refused before git init writes .git
        try:
            git.Repo(root, search_parent_directories=False)
        except (git.InvalidGitRepositoryError, git.NoSuchPathError):
            git.Repo.init(root)
        files = {CONFIG_FILE: default_config_text(name)}
        gitignore = root / ".gitignore"
        if not gitignore.exists():
            files[".gitignore"] = GITIGNORE
        elif ".kb/" not in gitignore.read_text(encoding="utf-8").split():
            files[".gitignore"] = gitignore.read_text(encoding="utf-8").rstrip("\n") + "\n" + GITIGNORE
        store.write(files, commit_message(f"kb init: {name}", "init"))
        return store

    @property
    def _write_lock(self) -> FileLock:
        # one per store: FileLock counts re-entries per instance (and thread), so write() may take
        # the lock its caller already holds; a second instance would wait on this very process
        if self._file_lock is None:
            self._file_lock = FileLock(str(self.state_dir / "write.lock"))
        return self._file_lock

    @contextmanager
    def lock(self) -> Iterator[None]:
        """The knowledge base's write lock, for as long as the block runs (again, when this store holds it
        already). A wait over LOCK_TIMEOUT_S is refused saying which lock and who holds it (lock_holder.py)."""
        self.require_writable()
        held = self._write_lock
        try:
            held.acquire(timeout=LOCK_TIMEOUT_S)
        except Timeout:
            raise StoreError(
                f"waited {LOCK_TIMEOUT_S} s for the write lock of {self.root} ({self.state_dir / 'write.lock'}), "
                f"held by {lock_holder.described(self.state_dir)}; nothing was written; try again once it is done"
            ) from None
        try:
            if held.lock_counter == 1:  # the outermost hold: no other writer is live
                lock_holder.record(self.state_dir)
                self.recover()
            yield
        finally:
            if held.lock_counter == 1:
                lock_holder.clear(self.state_dir)
            held.release()

    def recover_if_interrupted(self) -> None:
        """For readers: undo a dead writer's half-done write before anything reads the files (a stat
        when there is none; nothing when a writer is live, as its journal is then its own)."""
        if not (self.state_dir / JOURNAL).exists() and not (self.state_dir / JOURNAL_TEMP).exists():
            return
        try:
            with self._write_lock.acquire(timeout=0):
                self.recover()
        except Timeout:
            pass

    def recover(self) -> list[str]:
        """Under the lock, where no other writer is live: settle what a killed process left (its write,
        its temp files, sync's merge worktree); the paths it put back."""
        self._remove_leftovers()
        journal = self.state_dir / JOURNAL
        try:
            record = _Journal.from_json(journal.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        except (ValueError, KeyError, TypeError):
            journal.unlink(missing_ok=True)  # torn while it was being written: the write had not begun
            return []
        landed = self._settle(record, killed=True)
        return [] if landed else sorted(record.files)

    def write(self, files: Mapping[str, str | bytes | None], message: str) -> str:
        """Write (or, for None, delete) files relative to the root in one commit; returns its sha. A file
        or a message that would add a credential is refused first (store/secrets.py), whichever command
        wrote it, unless allow_secrets.

        Takes the lock (again, if the caller holds it: call it under `lock()` when the content depends
        on what is already there). Atomic to every signal (see `journaled`).
        """
        if self.repo is not None and self.signs_as_kb and self._note is not None:
            self._note(NO_IDENTITY)
        message = _printable(message)  # a folder's or a project's name in it, too, is shown by git log as it is
        with self.lock():
            paths = {rel: self.inside(rel) for rel in files}
            if not self.allow_secrets:  # every file and the message, before anything is touched
                before = {rel: (p.read_bytes() if p.exists() else None) for rel, p in paths.items()}
                check_write(files, before, message, self.credential_override)

            def write_files() -> None:
                for rel, text in files.items():
                    replace_file(paths[rel], text)

            def commit() -> None:
                self.repo.git.add("--all", "--", *files)
                self.repo.git.commit("--quiet", "-m", message, "--", *files)

            self.journaled(files, write_files, commit)
            return self.repo.head.commit.hexsha

    def uncommitted(self, rels: Iterable[str]) -> list[str]:
        """Those of rels whose file here is not as HEAD holds it: edited, staged, deleted, or never committed."""
        wanted = set(rels)
        if not wanted:
            return []
        out = self.repo.git.status("--porcelain", "-z", "--no-renames", "--untracked-files=all")
        return sorted(entry[3:] for entry in out.split("\0") if entry[3:] in wanted)

    def refuse_uncommitted(self, rels: Iterable[str], origin: str) -> None:
        """Conflict, naming the first, when a write from elsewhere (an import) would replace a file of rels that
        holds changes no commit has: git could not give them back."""
        dirty = self.uncommitted(rels)
        if not dirty:
            return
        rel = dirty[0]
        parts = rel.split("/")
        what = f"card {parts[-1].removesuffix('.md')!r} ({rel})" if parts[0] == CARDS_DIR and len(parts) == 3 else rel
        raise Conflict(
            f"{origin}: {what} holds uncommitted changes here, which this would overwrite; commit them (git add "
            f"{rel}; git commit) or set them aside, then try again; nothing written"
        )

    def journaled(self, rels: Iterable[str], prepare: Callable[[], None], land: Callable[[], None]) -> None:
        """A change to the files at rels that moves HEAD: prepare() gets it ready (writes files), land() makes
        it (commits, fast-forwards). Whatever interrupts it, the change is whole or undone: the files are
        journaled first, an interruption before land() puts them back, and once land() has begun, Ctrl-C
        and SIGTERM wait for it (store/interrupts.py); a kill is settled by the next open."""
        with self.lock():
            paths = {rel: self.inside(rel) for rel in rels}
            record = _Journal(
                head=self.head(),
                files={rel: (p.read_bytes() if p.exists() else None) for rel, p in paths.items()},
                new_dirs=[self.relative(d) for d in missing_dirs(paths.values(), self.root)],
            )
            self.begin(record)
            try:
                prepare()
                with deferred():
                    land()
                    (self.state_dir / JOURNAL).unlink(missing_ok=True)
            except BaseException as exc:
                with deferred(commits=False):  # a rollback is not cut in two either
                    landed = self._settle(record, killed=False)
                if not isinstance(exc, (git.GitCommandError, OSError)):
                    raise  # Ctrl-C, a signal: the files are as HEAD says, the interruption goes on up
                if not landed:
                    raise StoreError(_refusal(exc)) from None

    @contextmanager
    def worktree(self, commit: str) -> Iterator[git.Repo]:
        """A detached worktree of commit in the state folder, for work that must not touch this checkout (sync's
        merge); removed afterwards, and, if this process is killed meanwhile, by the next open (it is journaled,
        so a reader's open clears it too: git fsck and fetch fail while a half-made worktree is registered)."""
        place = self.state_dir / f"{WORKTREE_PREFIX}{os.getpid()}"
        self.begin(_Journal(self.head(), {}, []))
        try:
            with deferred(commits=False):
                shutil.rmtree(place, ignore_errors=True)
                self.repo.git.worktree("add", "--detach", "--quiet", str(place), commit)
            work = git.Repo(place)
            work.git.update_environment(**identity_env(self.repo))
            yield work
        finally:
            with deferred(commits=False):
                shutil.rmtree(place, ignore_errors=True)
                self.repo.git.worktree("prune")
                (self.state_dir / JOURNAL).unlink(missing_ok=True)

    def begin(self, record: _Journal) -> None:
        """Record a change about to happen, durably, before any file is touched (recover() settles it)."""
        temp = self.state_dir / JOURNAL_TEMP
        with temp.open("w", encoding="utf-8") as handle:
            handle.write(record.to_json())
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, self.state_dir / JOURNAL)

    def _settle(self, record: _Journal, killed: bool) -> bool:
        """Finish with an interrupted change: if HEAD moved past the journal's commit, it landed and its files
        stay; otherwise they are put back. Temp files it left go either way. Whether it landed. killed: its
        writer died (recovery), so an index.lock may be its git's; else this process's git is done and any
        index.lock is someone else's."""
        if killed:
            _wait_for_live_git(self.git_dir)
        landed = self.head() != record.head
        paths = {rel: self.inside(rel) for rel in record.files}
        for path in paths.values():
            remove_temp_files(path)
        if not landed:
            if killed:
                (self.git_dir / "index.lock").unlink(missing_ok=True)  # the killed commit's, if it got that far
            self._restore(paths, record.files, [self.inside(d) for d in record.new_dirs])
        elif paths:
            self._unstage(paths)  # a commit killed after its ref moved may not have written the index
        (self.state_dir / JOURNAL).unlink(missing_ok=True)
        return landed

    @property
    def git_dir(self) -> Path:
        return Path(self.repo.git_dir)

    def _remove_leftovers(self) -> None:
        """What a killed process leaves that no journal names: a torn journal's temp file, and the worktrees
        sync merges in (kb's own, in its state folder; any there is stale, as no writer is live)."""
        for entry in os.scandir(self.state_dir) if self.state_dir.is_dir() else []:
            if entry.name.startswith(f".{JOURNAL}.") and entry.name.endswith(".tmp"):  # older kbs' name too
                Path(entry.path).unlink(missing_ok=True)
            elif entry.name.startswith(WORKTREE_PREFIX) and entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path, ignore_errors=True)
        admin = Path(self.repo.common_dir) / "worktrees"
        for entry in os.scandir(admin) if admin.is_dir() else []:
            try:
                checkout = Path((Path(entry.path) / "gitdir").read_text(encoding="utf-8").strip()).parent
            except OSError:  # killed before git wrote it: the name says whose it is
                checkout = self.state_dir / entry.name
            if checkout.parent.resolve() == self.state_dir.resolve() and checkout.name.startswith(WORKTREE_PREFIX):
                shutil.rmtree(checkout, ignore_errors=True)
                shutil.rmtree(entry.path, ignore_errors=True)

    def head(self) -> str | None:
        try:
            return self.repo.head.commit.hexsha
        except ValueError:  # no commit yet (kb init's own write)
            return None

    def _restore(self, paths: Mapping[str, Path], before: Mapping[str, bytes | None], new_dirs: list[Path]) -> None:
        for rel, content in before.items():
            path = paths[rel]
            if content is None:
                path.unlink(missing_ok=True)
            else:
                path.write_bytes(content)  # killed midway, the journal is still there to do it again
        for directory in new_dirs:  # deepest first
            with contextlib.suppress(OSError):  # not empty: something else lives there now
                directory.rmdir()
        self._unstage(paths)

    def _unstage(self, paths: Mapping[str, Path]) -> None:
        # nothing staged yet (or no HEAD): the working tree is already restored
        with contextlib.suppress(git.GitCommandError):
            self.repo.git.reset("--quiet", "--", *paths)

    def history(self, rel: str) -> list[Commit]:
        try:
            # not --follow: its rename guess would take a deleted similar card's commits for this one's
            out = self.repo.git.log("--no-renames", git_log.FORMAT, "--", rel)
        except git.GitCommandError:
            return []
        return [commit for commit, _ in git_log.records(out)]

    def history_with_diffs(self, rel: str, limit: int = 10) -> list[tuple[Commit, str]]:
        """The newest `limit` commits of a file, each with its patch to that file: one git call."""
        try:
            out = self.repo.git.log("--no-renames", f"-{limit}", git_log.FORMAT, "-p", "--", rel)
        except git.GitCommandError:
            return []
        return [(commit, patch.strip("\n")) for commit, patch in git_log.records(out)]

    def changes(self, revisions: list[str], paths: Iterable[str]) -> list[tuple[Commit, list[tuple[str, str]]]]:
        """Commits (newest first) touching paths, each with its (status letter, path) pairs: A, M, D,
        or R for a rename (the new path). revisions are git log's: ["--since=7 days ago"], ["abc123..HEAD"]."""
        try:
            out = self.repo.git.log(*revisions, git_log.FORMAT, "--name-status", "--no-renames", "--", *paths)
        except git.GitCommandError as exc:
            raise KbError(f"git log refused: {' '.join(str(exc.stderr).split())[:200]}") from None
        found = []
        for commit, files in git_log.records(out):
            touched = [tuple(line.split("\t", 1)) for line in files.strip().splitlines() if "\t" in line]
            found.append((commit, [(s[0], p) for s, p in touched]))
        return found

    def is_commit(self, ref: str) -> bool:
        try:
            self.repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}")
        except git.GitCommandError:
            return False
        return True


@contextmanager
def locked_in_order(*stores: Store) -> Iterator[None]:
    """The write locks of several knowledge bases (`kb promote`: the team's and this one's), taken in one order
    for every process, by the lock file's path: two commands that each need the same two locks (opposite
    promotes) never hold one each while they wait for the other."""
    with contextlib.ExitStack() as held:
        for store in sorted(stores, key=lambda s: str((s.state_dir / "write.lock").resolve())):
            held.enter_context(store.lock())
        yield


def _refusal(exc: BaseException) -> str:
    """git's refusal in one line, with its remedy: cut at 300 characters, git's own message about a
    stale index.lock loses the part that says what to do."""
    detail = " ".join(str(getattr(exc, "stderr", "") or exc).split())
    if "index.lock" in detail:
        return (
            "git refused the write: .git/index.lock exists (a git command is running in this repository, or one "
            "was killed); nothing was changed. If none is running, remove .git/index.lock and try again"
        )
    return f"git refused the write ({detail[:300]}); nothing was changed"


def _wait_for_live_git(git_dir: Path) -> None:
    """A writer killed with SIGKILL leaves its git child running: give a fresh index.lock (the child's) the
    moment it needs to finish, so what HEAD says is final before anyone decides by it."""
    lock = git_dir / "index.lock"
    while True:
        try:
            age = time.time() - lock.stat().st_mtime
        except FileNotFoundError:
            return
        if age >= LIVE_GIT_S:
            return  # stale: its git died too
        time.sleep(0.05)


def is_file(path: Path) -> bool:
    """Whether a file is there; a name longer than the file system takes (ENAMETOOLONG: an id of 5,000
    characters, typed or in a URL) names none, rather than failing the lookup."""
    try:
        return path.is_file()
    except OSError:
        return False


_UNPRINTABLE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _printable(message: str) -> str:
    """A commit message with each control character (a terminal escape, a NUL, which git refuses in an
    argument) and bidirectional override written out as \\xNN or \\uNNNN; lines and tabs kept."""
    return _UNPRINTABLE.sub(lambda m: f"\\x{ord(m[0]):02x}" if ord(m[0]) < 256 else f"\\u{ord(m[0]):04x}", message)
