"""Where a knowledge base's sources (kb.toml [[sources]]) are on disk, and `kb sources update`: a
folder is read where it is; a git repository is cloned into .kb/sources/NAME and moved to its ref
(a branch's newest commit, a tag, a commit) on each update. The copies are kb's, never edited."""

from __future__ import annotations

import shutil
from pathlib import Path

import git

from kbtool.model.errors import BadInput
from kbtool.store.config import SourceSection
from kbtool.store.git_runner import GitFailed, clone, run_git
from kbtool.store.git_urls import check_git_url


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
    try:
        if not (where / ".git").is_dir():
            shutil.rmtree(where, ignore_errors=True)
            where.parent.mkdir(parents=True, exist_ok=True)
            clone(url, where, "no-checkout")
        run_git("fetch", "--quiet", "--tags", "--force", "origin", cwd=where)
        ref = source.ref or run_git("rev-parse", "--abbrev-ref", "origin/HEAD", cwd=where).removeprefix("origin/")
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
    except GitFailed as exc:
        raise BadInput(f"source {source.name}: {exc}") from None


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
