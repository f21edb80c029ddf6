"""Where a knowledge base's sources are on disk, and `kb sources update`.

The sources are kb.toml's [[sources]]. A folder is read where it is; a git repository is cloned into
.kb/sources/NAME and moved to its ref (a branch's newest commit, a tag, a commit; without one, the branch its
remote's HEAD names) on each update. The copies are kb's, never edited. A knowledge base's identity is here
too (its [kb] id, else its first commit), so a folder source that now holds another knowledge base is
refused rather than read as the one before."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from kbtool.model.errors import BadInput
from kbtool.store.config import SourceSection
from kbtool.store.git_runner import GitFailed, clone, run_git
from kbtool.store.git_urls import check_git_url

FETCHED = "kb-fetched"  # in a git source's copy's .git: touched after each fetch that succeeded


def source_root(root: Path, state_dir: Path, source: SourceSection) -> Path:
    if source.path is not None:
        return (root / Path(source.path).expanduser()).resolve()
    return state_dir / "sources" / source.name


def update(root: Path, state_dir: Path, source: SourceSection) -> str:
    """Bring a git source's copy to its ref (clone on first use); a folder source is only checked.
    Returns the commit the source now reads (or '' for a folder outside git)."""
    where = source_root(root, state_dir, source)
    if source.url is None:
        if not where.is_dir():
            raise BadInput(f"source {source.name}: {where} is not a folder")
        try:
            return git.Repo(where).head.commit.hexsha
        except (git.InvalidGitRepositoryError, git.NoSuchPathError, ValueError):
            return ""
    url = (
        str((root / source.url).resolve())
        if (root / source.url).is_dir()
        else check_git_url(source.url, f"source {source.name}: url")
    )
    fresh = not (where / ".git").is_dir()
    try:
        if fresh:
            shutil.rmtree(where, ignore_errors=True)
            where.parent.mkdir(parents=True, exist_ok=True)
            clone(url, where, "no-checkout")
        run_git("fetch", "--quiet", "--tags", "--force", "origin", cwd=where)
        (where / ".git" / FETCHED).touch()  # after it succeeded: a failed fetch rewrites FETCH_HEAD too
        ref = source.ref or _remote_head(where, source)
        for candidate in (f"origin/{ref}", f"refs/tags/{ref}", ref):
            try:
                commit = run_git("rev-parse", "--verify", "--quiet", f"{candidate}^{{commit}}", cwd=where)
                break
            except GitFailed:
                continue
        else:
            raise BadInput(f"source {source.name}: no branch, tag or commit {ref!r} in {source.url}")
        run_git("checkout", "--quiet", "--force", "--detach", commit, cwd=where)
        return commit
    except (GitFailed, BadInput) as exc:
        if fresh:  # nothing half-made: a copy that never read a commit is cloned anew next time
            shutil.rmtree(where, ignore_errors=True)
        said = f"source {source.name}: {exc}" if isinstance(exc, GitFailed) else str(exc)  # ours names it already
        raise BadInput(said) from None


def _remote_head(where: Path, source: SourceSection) -> str:
    """The branch the source's remote HEAD names, asked anew on every update (a remote whose HEAD moved, or
    named a branch it lacked, is read right once it is fixed there); refused naming its branches when the
    branch it names is not there."""
    try:
        run_git("remote", "set-head", "origin", "--auto", cwd=where)
        return run_git("rev-parse", "--abbrev-ref", "origin/HEAD", cwd=where).strip().removeprefix("origin/")
    except GitFailed:
        listed = run_git("for-each-ref", "--format=%(refname:lstrip=3)", "refs/remotes/origin", cwd=where).split()
        branches = ", ".join(b for b in listed if b != "HEAD") or "none"
        raise BadInput(
            f"source {source.name}: {source.url}'s HEAD names a branch it does not have (its branches: "
            f'{branches}); name one as ref = "BRANCH" in its [[sources]] table, or fix HEAD there, then '
            "kb sources update"
        ) from None


def head_commit(where: Path) -> tuple[str, int] | None:
    """(commit, its committer time as epoch seconds) a source reads at where; None for a folder that is not a
    repository's top (git would answer for an enclosing one) or a copy not made yet."""
    if not (where / ".git").exists():
        return None
    try:
        commit, _, when = run_git("log", "-1", "--format=%H %ct", cwd=where).partition(" ")
    except GitFailed:
        return None  # a clone whose checkout never happened: no HEAD
    return (commit, int(when)) if when.strip().isdigit() else None


def kb_identity(root: Path, declared: str | None) -> str | None:
    """A knowledge base's identity: kb.toml [kb] id, or for one made before ids (the starter KB) its root
    commit's sha, which every clone shares and no rewrite of later history changes (the smallest, for a
    history with several roots); None for a repository with no commit yet."""
    if declared:
        return declared
    roots = _first_commits(root)
    return min(roots) if roots else None


def _first_commits(root: Path) -> list[str]:
    """The root commits of the history at root; none for a shallow clone (its roots are where its history was
    cut, not the knowledge base's) or a repository with no commit yet."""
    if (root / ".git" / "shallow").exists():
        return []
    try:
        return run_git("rev-list", "--max-parents=0", "HEAD", cwd=root).split()
    except GitFailed:
        return []


def known_as(root: Path, declared: str | None, kb_id: str) -> bool:
    """Whether kb_id names the knowledge base at root: its [kb] id, or the first commit it went by before it had
    one. A starter-style knowledge base given an id later stays itself to the copies and the sources that
    noted it by its first commit, which every clone of it shares (as sync tells one from another)."""
    return kb_id == kb_identity(root, declared) or kb_id in _first_commits(root)


def team_remote(root: Path) -> str | None:
    """The URL of the git remote `origin` of the repository whose top is root, which every teammate's clone
    can reach, or None: a folder outside git, or a repository with no such remote."""
    if not (root / ".git").exists():
        return None
    try:
        url = run_git("remote", "get-url", "origin", cwd=root).strip()
    except GitFailed:
        return None
    if not url or "://" in url or ":" in url.split("/", 1)[0]:
        return url or None  # a URL (https://, ssh://, user@host:path) is the same on every machine
    return str((root / url).resolve())  # a path remote: git keeps it as given, relative to the clone


def last_fetch(where: Path) -> float | None:
    """When a git source's copy was last fetched with success (epoch seconds): kb touches FETCHED after each
    (git rewrites FETCH_HEAD on a failed fetch too); FETCH_HEAD for a copy fetched before kb did so."""
    for name in (FETCHED, "FETCH_HEAD"):
        try:
            return (where / ".git" / name).stat().st_mtime
        except OSError:
            continue
    return None


def missing_source(source: SourceSection, where: Path) -> str:
    """What to do about a source that is not there to read (never `kb init` on it: it is someone's KB)."""
    if source.url is not None:
        if (where / ".git").is_dir():
            return f"its copy {where} holds no knowledge base; run `kb sources update` (or check its url)"
        return f"not copied to this machine yet; run `kb sources update` (or `kb sync`) to clone {source.url}"
    return f"no knowledge base at {where}; clone it there, or point its path (or a url) in kb.toml at it"


def replaced_source(state_dir: Path, source: SourceSection, where: Path, kb_id: str | None) -> str | None:
    """Why a folder source is refused: the knowledge base there is not the one this machine read there before
    (another [kb] id), naming both identities; None when it is, or on the first read (its identity is recorded
    then, under .kb/, for the next). A git source's copy is kb's own and is not checked here."""
    if source.url is not None or kb_id is None:
        return None
    seen = state_dir / "sources" / f"{source.name}.id"
    try:
        before = seen.read_text(encoding="utf-8").strip()
    except OSError:
        before = ""
    if before and before != kb_id and known_as(where, kb_id, before):  # the same one, given an id since
        before = ""
    if before and before != kb_id:
        return (
            f"{where} is the knowledge base {kb_id} now, not {before} read there before; point its path in "
            f"kb.toml at {before}'s folder, or, if {kb_id} is meant to replace it, delete {seen}"
        )
    if not before:  # recorded (again, under its id now) for the next read
        try:
            seen.parent.mkdir(parents=True, exist_ok=True)
            seen.write_text(kb_id + "\n", encoding="utf-8")
        except OSError:
            pass  # a read-only .kb: the source is read unpinned, as before ids
    return None
