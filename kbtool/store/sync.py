"""`kb sync [REMOTE]`: fetch, integrate, push, so clones on several machines converge.

The local knowledge base is only ever moved forward to a commit that is complete: when both sides
have new commits, the merge is made in a temporary worktree (kbtool/store/merge.py merges a card
both changed field by field), committed there, and the local branch then fast-forwards to it. A
conflict, or kb.lock changed on both sides (gate locks are never merged), stops the sync with a
report and leaves the local knowledge base exactly as it was. A push the remote rejects because
someone pushed meanwhile is retried from the fetch.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path

import git

from kbtool.model.errors import BadInput, CheckFailed
from kbtool.store import incoming
from kbtool.store.commits import commit_message
from kbtool.store.config import load_config
from kbtool.store.git_runner import git_reason
from kbtool.store.merge import Clash, Unmergeable, merge_card, merge_log, merge_text
from kbtool.store.repository import LOCK_FILE, Store

CARD_FILE = re.compile(r"^kb/[a-z-]+/[^/]+\.md$")
ATTEMPTS = 3  # fetch-merge-push rounds before giving up on a remote others keep pushing to


class SyncConflict(CheckFailed):
    """The two sides changed something kb will not choose between; nothing was changed here."""

    def __init__(self, clashes: list[Clash], remote: str):
        lines = "\n".join(f"  {c.line()}" for c in clashes)
        super().__init__(
            f"sync with {remote} stopped: {len(clashes)} conflict(s); this knowledge base is as it was\n{lines}\n"
            "settle each here (kb edit, or supersede one card with another), commit, and sync again"
        )
        self.clashes = clashes


@dataclass
class SyncResult:
    remote: str
    branch: str
    received: int = 0  # commits taken from the remote
    sent: int = 0  # commits pushed to it
    merged: list[str] = field(default_factory=list)  # files both sides changed, merged by kb
    changed: list[str] = field(default_factory=list)  # files the sync changed here

    def line(self) -> str:
        if not self.received and not self.sent:
            return f"up to date with {self.remote}/{self.branch}"
        merged = f", {len(self.merged)} file(s) merged field by field" if self.merged else ""
        return f"received {self.received} commit(s), sent {self.sent}{merged} ({self.remote}/{self.branch})"


def sync(store: Store, remote: str = "origin") -> SyncResult:
    with store.lock():
        repo = store.repo
        if remote not in [r.name for r in repo.remotes]:
            known = ", ".join(r.name for r in repo.remotes) or "none"
            raise BadInput(f"no remote {remote!r} (this knowledge base has: {known}); git remote add {remote} URL")
        if repo.head.is_detached:
            raise BadInput("HEAD is detached; check out a branch to sync it")
        branch = repo.active_branch.name
        dirty = repo.git.status("--porcelain", "--untracked-files=no").splitlines()
        if dirty:
            shown = ", ".join(line[3:] for line in dirty[:3]) + (" ..." if len(dirty) > 3 else "")
            raise BadInput(f"uncommitted changes ({shown}); commit them first: a sync moves only whole commits")
        result = SyncResult(remote, branch)
        for _attempt in range(ATTEMPTS):
            _fetch(repo, remote, branch)
            upstream = f"refs/remotes/{remote}/{branch}"
            before = repo.head.commit.hexsha
            if _exists(repo, upstream):
                _integrate(store, repo, upstream, remote, result)
            if _push(repo, remote, branch, upstream, result):
                result.changed = _changed(repo, before)
                return result
        raise CheckFailed(f"{remote} kept moving: {ATTEMPTS} pushes were overtaken by others; sync again")


def _fetch(repo: git.Repo, remote: str, branch: str) -> None:
    try:
        repo.git.fetch("--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
    except git.GitCommandError as exc:
        if "couldn't find remote ref" in str(exc.stderr):
            return  # a remote without this branch yet: the push creates it
        raise BadInput(f"git fetch {remote}: {git_reason(exc)}") from None


def _exists(repo: git.Repo, ref: str) -> bool:
    try:
        repo.git.rev_parse("--verify", "--quiet", ref)
        return True
    except git.GitCommandError:
        return False


def _integrate(store: Store, repo: git.Repo, upstream: str, remote: str, result: SyncResult) -> None:
    head, theirs = repo.head.commit.hexsha, repo.commit(upstream).hexsha
    base = repo.git.merge_base(head, theirs)
    if theirs in (head, base):
        return  # nothing there that is not here
    result.received += len(repo.git.rev_list(f"{head}..{theirs}").split())
    target = theirs if base == head else _merged_commit(store, repo, head, theirs, base, upstream, remote, result)
    refused = incoming.problems(repo, store.root, head, target, load_config(store.root).limits)
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise BadInput(f"sync with {remote} refused: {refused[0]}{more}; this knowledge base is as it was")
    changed = [c.path for c in incoming.changes(repo, head, target)]
    store.journaled(changed, lambda: None, lambda: repo.git.merge("--ff-only", "--quiet", target))


def _merged_commit(
    store: Store, repo: git.Repo, head: str, theirs: str, base: str, upstream: str, remote: str, result: SyncResult
) -> str:
    """Both sides moved: merge in a worktree of its own, commit there, and return the commit."""
    with store.worktree(head) as work:
        place = Path(work.working_dir)
        with contextlib.suppress(git.GitCommandError):  # conflicts: resolved (or reported) below
            work.git.merge("--no-ff", "--no-commit", "--quiet", theirs)
        ours_changed = set(repo.git.diff("--name-only", base, head).splitlines())
        theirs_changed = set(repo.git.diff("--name-only", base, theirs).splitlines())
        unmerged = set(work.git.diff("--name-only", "--diff-filter=U").splitlines())
        both = sorted((ours_changed & theirs_changed) | unmerged)
        clashes: list[Clash] = []
        for rel in both:
            try:
                resolved = _resolve(repo, rel, base, head, theirs)
            except Unmergeable as exc:
                clashes += exc.clashes
                continue
            target = place / rel
            if resolved is None:
                work.git.rm("--quiet", "--force", "--ignore-unmatch", "--", rel)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(resolved, encoding="utf-8")
                work.git.add("--", rel)
            result.merged.append(rel)
        if clashes:
            raise SyncConflict(clashes, remote)
        message = commit_message(f"kb sync: merge {upstream.removeprefix('refs/remotes/')}", "sync")
        work.git.commit("--quiet", "--no-verify", "-m", message)
        return work.head.commit.hexsha


def _show(repo: git.Repo, rev: str, rel: str) -> str | None:
    try:
        return str(repo.git.show(f"{rev}:{rel}", strip_newline_in_stdout=False))
    except git.GitCommandError:
        return None  # not there on that side


def _resolve(repo: git.Repo, rel: str, base: str, head: str, theirs: str) -> str | None:
    """The file both sides changed, merged; None when both deleted it; Unmergeable otherwise."""
    old, ours, other = _show(repo, base, rel), _show(repo, head, rel), _show(repo, theirs, rel)
    if ours == other:
        return ours
    if rel == LOCK_FILE:
        raise Unmergeable([Clash(rel, "gate locks", "changed here", "changed there: kb never merges locks")])
    if ours is None or other is None:
        side = "deleted here, changed there" if ours is None else "changed here, deleted there"
        raise Unmergeable([Clash(rel, "(the file)", *side.split(", "))])
    if CARD_FILE.match(rel):
        return merge_card(rel, old, ours, other, _later(repo, rel, head, theirs))
    if rel.startswith("runs/") and rel.endswith(".jsonl"):
        return merge_log(old, ours, other)
    text = merge_text(old or "", ours, other)
    if text is None:
        raise Unmergeable([Clash(rel, "(text)", "edited here", "edited there, in the same lines")])
    return text


def _later(repo: git.Repo, rel: str, head: str, theirs: str) -> str:
    """Which side changed the file last, by commit time (ties go to here)."""
    ours_time = int(repo.git.log("-1", "--format=%ct", head, "--", rel) or 0)
    theirs_time = int(repo.git.log("-1", "--format=%ct", theirs, "--", rel) or 0)
    return "theirs" if theirs_time > ours_time else "ours"


def _push(repo: git.Repo, remote: str, branch: str, upstream: str, result: SyncResult) -> bool:
    """Push what the remote lacks; False when someone pushed meanwhile (fetch and integrate again)."""
    head = repo.head.commit.hexsha
    ahead = repo.git.rev_list(head, f"^{upstream}") if _exists(repo, upstream) else repo.git.rev_list(head)
    count = len(ahead.split())
    if not count:
        return True
    try:
        repo.git.push("--quiet", remote, f"{head}:refs/heads/{branch}")
    except git.GitCommandError as exc:
        if "rejected" in str(exc.stderr) or "fetch first" in str(exc.stderr):
            return False
        raise BadInput(f"git push {remote}: {git_reason(exc)}") from None
    repo.git.update_ref(upstream, head)
    result.sent += count
    return True


def _changed(repo: git.Repo, before: str) -> list[str]:
    head = repo.head.commit.hexsha
    return [] if head == before else repo.git.diff("--name-only", before, head).splitlines()
