"""`kb sync [REMOTE]`: fetch, integrate, push, so clones on several machines converge.

The local knowledge base is only ever moved forward to a commit that is complete: when both sides
have new commits, the merge is made in a temporary worktree (kbtool/store/merge.py merges a card
both changed field by field, and kb.lock gate by gate), committed there, and the local branch then
fast-forwards to it. A conflict stops the sync with a report and leaves the local knowledge base exactly
as it was, unless a side was taken for it (--take). A push the remote rejects because someone pushed
meanwhile is retried from the fetch.

A commit arriving that changed a gate's kb.lock entry without a person's `kb gate relock` is refused the
same way: nothing lands, and the commit is named (kbtool/store/lock_history.py); one of this clone's own,
not yet on the remote, is not sent.

A remote whose history was rewritten (a force-push that purged a card) no longer holds commits this clone
got from it; pushing them back would silently undo the purge, so the sync stops and names them. With
accept_rewrite the clone takes the rewritten history: its own changes since it last synced are merged onto
the remote's new head (a commit whose only parent is that head) and the lost commits stay lost. The commit
a clone last synced with is kept in refs/kb/synced/REMOTE/BRANCH (a plain `git fetch` moves the
remote-tracking branch past a rewrite; this ref is only moved by kb sync).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import git

from kbtool.model import markdown
from kbtool.model.errors import BadInput, CheckFailed, KbError
from kbtool.model.vocabulary import CONFIG_FILE
from kbtool.store import incoming
from kbtool.store.commits import commit_message
from kbtool.store.config import load_config, parse_config
from kbtool.store.git_runner import git_reason
from kbtool.store.lock_file import parse_lock
from kbtool.store.lock_history import Tampering, arriving_tampering, lock_history
from kbtool.store.merge import (
    WHOLE_FILE,
    Clash,
    Take,
    Unmergeable,
    card_line,
    merge_card,
    merge_lock,
    merge_log,
    merge_text,
    taken_side,
    text_clash,
    two_cards,
)
from kbtool.store.repository import LOCK_FILE, Store

CARD_FILE = re.compile(r"^kb/[a-z-]+/[^/]+\.md$")
ATTEMPTS = 3  # fetch-merge-push rounds before giving up on a remote others keep pushing to


SETTLE = (
    "settle each: kb sync --take theirs:FIELD (or ours:; every card) or --take theirs:CARD_ID:FIELD (one "
    "card; GATE_ID:lock for kb.lock; CARD_ID:file or PATH:file for a whole file), or edit it here to their value "
    "exactly; two cards with one id: rename "
    "yours (git mv kb/KIND/ID.md kb/KIND/NEW-ID.md, set id: NEW-ID in it, commit) and sync again"
)
REWRITE = (
    "if the purge was meant, kb sync --accept-rewrite takes the remote's history (your own changes since the "
    "last sync are kept, the lost commits stay lost); if not, ask who force-pushed"
)


class SyncConflict(CheckFailed):
    """The two sides changed something kb will not choose between; nothing was changed here."""

    def __init__(self, clashes: list[Clash], remote: str):
        lines = "\n".join(f"  {c.line()}" for c in clashes)
        super().__init__(
            f"sync with {remote} stopped: {len(clashes)} conflict(s); this knowledge base is as it was\n{lines}\n"
            + SETTLE
        )
        self.clashes = clashes
        self.settle = SETTLE


class RemoteRewritten(CheckFailed):
    """The remote lost commits this clone has from it (a force-push); nothing was changed here or there."""

    def __init__(self, lost: list[str], remote: str, branch: str):
        shown = "; ".join(lost[:5]) + (f" (and {len(lost) - 5} more)" if len(lost) > 5 else "")
        super().__init__(
            f"sync with {remote} stopped: {remote}/{branch} was rewritten (force-pushed) and lost {len(lost)} "
            f"commit(s) this clone has: {shown}; pushing them back would undo that; this knowledge base is as it "
            f"was; {REWRITE}"
        )
        self.lost = lost
        self.settle = REWRITE


@dataclass
class SyncResult:
    remote: str
    branch: str
    received: int = 0  # commits taken from the remote
    sent: int = 0  # commits pushed to it
    merged: list[str] = field(default_factory=list)  # files both sides changed, merged by kb
    changed: list[str] = field(default_factory=list)  # files the sync changed here
    taken: list[Take] = field(default_factory=list)  # the sides taken for conflicts (--take)
    rewritten: bool = False  # the remote's rewritten history was accepted

    def line(self) -> str:
        if not self.received and not self.sent:
            return f"up to date with {self.remote}/{self.branch}"
        merged = f", {len(self.merged)} file(s) merged field by field" if self.merged else ""
        taken = sum(len(t.settled) for t in self.taken)
        settled = f", {taken} conflict(s) settled by --take" if taken else ""
        rewritten = "; took the remote's rewritten history" if self.rewritten else ""
        return (
            f"received {self.received} commit(s), sent {self.sent}{merged}{settled} ({self.remote}/{self.branch})"
            f"{rewritten}"
        )


# what a higher layer refuses of a move from one commit to another (a skill the security scan refuses): one line each
Vet = Callable[[git.Repo, str, str], list[str]]


def sync(
    store: Store,
    remote: str = "origin",
    takes: list[Take] | None = None,
    accept_rewrite: bool = False,
    vet: Vet | None = None,
) -> SyncResult:
    """Fetch, integrate, push (see the module); takes settle conflicts, and each must settle one. vet judges
    what would land, beside kbtool.store.incoming's checks."""
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
        result = SyncResult(remote, branch, taken=list(takes or []))
        upstream, synced = f"refs/remotes/{remote}/{branch}", f"refs/kb/synced/{remote}/{branch}"
        for _attempt in range(ATTEMPTS):
            seen = [_resolved(repo, ref) for ref in (synced, upstream)]
            _fetch(repo, remote, branch)
            _refuse_another_kb(repo, upstream, remote, branch)
            _refuse_sending_tampering(repo, upstream, remote)
            _refuse_sending_invalid(store, repo, upstream, remote)
            before = repo.head.commit.hexsha
            if _exists(repo, upstream):
                rewound = _rewound_from(
                    repo, [s for s in seen if s is not None], upstream, remote, branch, accept_rewrite
                )
                _integrate(store, repo, upstream, remote, result, rewound, vet)
            _unsettled(result.taken)
            if _push(repo, remote, branch, upstream, result):
                result.changed = _changed(repo, before)
                repo.git.update_ref(synced, repo.commit(upstream).hexsha if _exists(repo, upstream) else before)
                return result
        raise CheckFailed(f"{remote} kept moving: {ATTEMPTS} pushes were overtaken by others; sync again")


def _fetch(repo: git.Repo, remote: str, branch: str) -> None:
    try:
        repo.git.fetch("--quiet", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}")
    except git.GitCommandError as exc:
        if "couldn't find remote ref" in str(exc.stderr):
            # a remote without this branch (empty, or the branch deleted there): the push creates it. A
            # remote-tracking ref left from before would say the remote already has this clone's commits
            with contextlib.suppress(git.GitCommandError):
                repo.git.update_ref("-d", f"refs/remotes/{remote}/{branch}")
            return
        raise BadInput(f"git fetch {remote}: {git_reason(exc)}") from None


def _resolved(repo: git.Repo, ref: str) -> str | None:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", f"{ref}^{{commit}}"))
    except git.GitCommandError:
        return None


def _rewound_from(
    repo: git.Repo, known: list[str], upstream: str, remote: str, branch: str, accept: bool
) -> str | None:
    """The commit this clone last synced with, when the remote has since lost commits of it that this clone
    still holds (a force-push): raises RemoteRewritten naming them, or, with accept, returns that commit (the
    base this clone's own changes are taken from)."""
    head, theirs = repo.head.commit.hexsha, repo.commit(upstream).hexsha
    for old in known:
        gone = repo.git.rev_list(old, f"^{theirs}").split()
        if not gone:
            continue
        here = set(repo.git.rev_list(head, f"^{theirs}").split())
        lost = [sha for sha in gone if sha in here]
        if not lost:
            continue  # this clone dropped them too (it made the rewrite): nothing would come back
        if not accept:
            shown = repo.git.log("--no-walk=unsorted", "--format=%h %s", *lost).splitlines()
            raise RemoteRewritten(shown, remote, branch)
        return old
    return None


def _unsettled(takes: list[Take]) -> None:
    idle = next((t for t in takes if not t.settled), None)
    if idle is not None:
        raise BadInput(
            f"--take {idle.spec} settles no conflict of this sync; nothing was changed (kb sync --json lists them)"
        )


def _exists(repo: git.Repo, ref: str) -> bool:
    try:
        repo.git.rev_parse("--verify", "--quiet", ref)
        return True
    except git.GitCommandError:
        return False


def _integrate(
    store: Store, repo: git.Repo, upstream: str, remote: str, result: SyncResult, rewound: str | None, vet: Vet | None
) -> None:
    head, theirs = repo.head.commit.hexsha, repo.commit(upstream).hexsha
    base = rewound or repo.git.merge_base(head, theirs)
    if theirs in (head, base) and not rewound:
        return  # nothing there that is not here
    result.received += len(repo.git.rev_list(f"{head}..{theirs}").split())
    if rewound:
        target, result.rewritten = _merged_commit(store, repo, head, theirs, base, upstream, remote, result), True
        _refuse_unlocking(repo, head, target, remote, upstream.removeprefix("refs/remotes/"))
    else:
        target = theirs if base == head else _merged_commit(store, repo, head, theirs, base, upstream, remote, result)
    refused = incoming.problems(repo, store.root, head, target, load_config(store.root).limits)
    refused += vet(repo, head, target) if vet is not None and not refused else []
    if refused:
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        raise BadInput(f"sync with {remote} refused: {refused[0]}{more}; this knowledge base is as it was")
    _refuse_tampering(repo, head, target, remote)
    moves = incoming.changes(repo, head, target)
    _refuse_ids_twice(repo, target, [c.path for c in moves if c.status == "A"], remote)
    _unsettled(result.taken)
    changed = [c.path for c in moves]
    move = ("reset", "--keep", "--quiet") if rewound else ("merge", "--ff-only", "--quiet")
    store.journaled(changed, lambda: None, lambda: _git(repo, *move, target))


def _refuse_another_kb(repo: git.Repo, upstream: str, remote: str, branch: str) -> None:
    """The remote's branch holds another knowledge base (another kb.toml [kb] id; where either has none, another
    first commit): a sync never merges into it, nor pushes this one's cards there, --accept-rewrite or not."""
    if not _exists(repo, upstream):
        return
    here, there = _identity(repo, "HEAD"), _identity(repo, upstream)
    declared = here[0] is not None and there[0] is not None
    # a knowledge base made before ids (the starter KB) by its first commit, unless a shallow clone hides it
    if here[0] == there[0] if declared else (None in (here[1], there[1]) or here[1] == there[1]):
        return
    what = "id" if declared else "first commit"
    shown = (there[0], here[0]) if declared else (there[1], here[1])
    raise BadInput(
        f"sync with {remote} refused: {remote}/{branch} holds another knowledge base ({what} {shown[0]} there, "
        f"{shown[1]} here); kb syncs a knowledge base only with its own clones, and --accept-rewrite takes a "
        f"rewritten history of this one only; nothing was sent or received; check the remote (git remote -v)"
    )


def _identity(repo: git.Repo, rev: str) -> tuple[str | None, str | None]:
    """(kb.toml's [kb] id at rev, rev's first root commit): who a history is. A shallow clone's roots are where its
    history was cut, so it names none."""
    declared = None
    text = _show(repo, rev, CONFIG_FILE)
    if text:
        with contextlib.suppress(KbError):
            declared = parse_config(text).kb.id
    if str(repo.git.rev_parse("--is-shallow-repository")).strip() == "true":
        return declared, None
    roots = repo.git.rev_list("--max-parents=0", rev).split()
    return declared, min(roots) if roots else None


def _refuse_unlocking(repo: git.Repo, head: str, target: str, remote: str, where: str) -> None:
    """An accepted rewrite never takes a lock: each gate locked here keeps its kb.lock entry, its card and every
    file the entry covers as they are here, or nothing lands and nothing is sent (a force-push that dropped a
    lock commit would otherwise leave the gate unlocked and editable in every clone that accepts it)."""
    ours, theirs = parse_lock(_show(repo, head, LOCK_FILE)), parse_lock(_show(repo, target, LOCK_FILE))
    for gate, entry in sorted(ours.items()):
        if gate not in theirs:
            change = f"has no kb.lock entry for locked gate {gate!r}"
        else:
            paths = [f"kb/gate/{gate}.md", *sorted(entry.files)]
            changed = [LOCK_FILE] * (theirs[gate] != entry) + [
                p for p in paths if _blob(repo, head, p) != _blob(repo, target, p)
            ]
            if not changed:
                continue
            change = f"changes {', '.join(changed)} of locked gate {gate!r}"
        raise CheckFailed(
            f"sync with {remote} refused: the rewritten history of {where} {change}; taking it "
            "would unlock the gate here, and a rewrite never drops a lock; this knowledge base is as it was and "
            "nothing was sent; ask who force-pushed to put the lock back as it is here, then sync again"
        )


def _blob(repo: git.Repo, rev: str, rel: str) -> str | None:
    try:
        return str(repo.git.rev_parse("--verify", "--quiet", f"{rev}:{rel}"))
    except git.GitCommandError:
        return None


def _refuse_tampering(repo: git.Repo, head: str, target: str, remote: str) -> None:
    """A commit arriving from the remote that changed a gate's kb.lock entry without a person's relock (a
    script and its hash edited together, a gate's threshold with its hash recomputed): nothing lands, and the
    commit, its author and the file are named (kbtool/store/lock_history.py)."""
    found = arriving_tampering(repo, LOCK_FILE, head, target)
    if not found:
        return
    first = found[0]
    more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
    raise CheckFailed(
        f"sync with {remote} refused: {_tampered(first)}{more}; this knowledge base is as it was; a lock changes "
        f"only by a person's relock: ask {first.author} to revert it, or a person who has read it to relock the gate "
        f"there (`kb gate relock {first.gate} --reason TEXT`), and sync again"
    )


def _tampered(found: Tampering) -> str:
    """'COMMIT (AUTHOR: SUBJECT) changed the kb.lock entry of gate G (FILES) without a `kb gate relock`'."""
    what = ", ".join(found.changed(f"kb/gate/{found.gate}.md")) or LOCK_FILE
    return f"{found.commit_line()} changed the kb.lock entry of gate {found.gate!r} ({what}) without a `kb gate relock`"


def _refuse_sending_tampering(repo: git.Repo, upstream: str, remote: str) -> None:
    """A commit of this clone, not yet on the remote, that changed a gate's kb.lock entry without a person's
    relock: refused before anything moves, so it does not spread to every clone."""
    found = lock_history(repo, LOCK_FILE).tampered.values()
    here = [t for t in found if not _exists(repo, upstream) or not _is_ancestor(repo, t.commit, upstream)]
    if not here:
        return
    first = here[0]
    raise CheckFailed(
        f"sync with {remote} refused: this knowledge base holds {_tampered(first)}; nothing was sent or received; "
        f"revert it (git revert {first.commit[:10]}), or a person who has read it relocks the gate (`kb gate relock "
        f"{first.gate} --reason TEXT`), and sync again"
    )


def _refuse_sending_invalid(store: Store, repo: git.Repo, upstream: str, remote: str) -> None:
    """What this clone's own commits (those the remote lacks) would send, checked as a teammate's sync checks
    it (kbtool/store/incoming.py): an invalid card, a conflict marker, a file in kb/ that is not a card is
    refused before anything moves, with the whole list, since every teammate's sync would fail on it."""
    head = repo.head.commit.hexsha
    there = repo.git.merge_base(head, upstream) if _exists(repo, upstream) else incoming.EMPTY_TREE
    refused = incoming.problems(repo, store.root, there, head, load_config(store.root).limits, arriving=False)
    if refused:
        raise BadInput(
            f"sync with {remote} refused: this knowledge base's commits hold what kb would not write: "
            f"{'; '.join(refused)}; nothing was sent or received; fix each (`kb lint` shows them), commit, and "
            "sync again"
        )


def _is_ancestor(repo: git.Repo, commit: str, ref: str) -> bool:
    try:
        repo.git.merge_base("--is-ancestor", commit, ref)
        return True
    except git.GitCommandError:
        return False


def _git(repo: git.Repo, *args: str) -> None:
    repo.git.execute(["git", *args])


def _refuse_ids_twice(repo: git.Repo, target: str, added: list[str], remote: str) -> None:
    """One id in two kinds' folders (kb/gap/x.md and kb/finding/x.md, added on each side): git sees two files,
    kb two different cards with one id. Only ids the move adds are looked for (one ls-tree, 0.1 s at 10k)."""
    new = {Path(rel).stem: rel for rel in added if CARD_FILE.match(rel)}
    if not new:
        return
    clashes = []
    for rel in repo.git.ls_tree("-r", "--name-only", target, "kb/").splitlines():
        arrived = new.get(Path(rel).stem)
        if arrived is not None and rel != arrived and CARD_FILE.match(rel):
            lines = [card_line(markdown.load_frontmatter(repo.git.show(f"{target}:{r}"), r)[0]) for r in (rel, arrived)]
            clashes.append(two_cards(arrived, f"{rel}: {lines[0]}", f"{arrived}: {lines[1]}"))
    if clashes:
        raise SyncConflict(clashes, remote)


def _merged_commit(
    store: Store, repo: git.Repo, head: str, theirs: str, base: str, upstream: str, remote: str, result: SyncResult
) -> str:
    """Both sides moved: merge in a worktree of its own, commit there, and return the commit. After an accepted
    rewrite (result.rewritten pending: base is not an ancestor of theirs) the worktree starts at theirs and
    takes only this clone's own changes since base, so the commit's one parent is the remote's head."""
    rewrite = bool(repo.git.rev_list(base, f"^{theirs}").strip())
    if rewrite and not repo.git.diff("--name-only", base, head).strip():
        return theirs  # nothing of this clone's own to keep: the remote's head as it is, no empty commit
    with store.worktree(theirs if rewrite else head) as work:
        place = Path(work.working_dir)
        if rewrite and _replayed(repo, work, base, head):
            return work.head.commit.hexsha
        if not rewrite:
            with contextlib.suppress(git.GitCommandError):  # conflicts: resolved (or reported) below
                work.git.merge("--no-ff", "--no-commit", "--quiet", theirs)
        ours_changed = set(repo.git.diff("--name-only", base, head).splitlines())
        theirs_changed = set(repo.git.diff("--name-only", base, theirs).splitlines())
        unmerged = set() if rewrite else set(work.git.diff("--name-only", "--diff-filter=U").splitlines())
        both = sorted(ours_changed if rewrite else (ours_changed & theirs_changed) | unmerged)
        clashes: list[Clash] = []
        for rel in both:
            try:
                resolved = _resolve(repo, rel, base, head, theirs, result.taken)
            except Unmergeable as exc:
                clashes += exc.clashes
                continue
            _place(work, place, rel, resolved)
            if rel in theirs_changed:
                result.merged.append(rel)
        if clashes:
            _unsettled(result.taken)  # a mistyped --take is named before the conflicts it left
            raise SyncConflict(clashes, remote)
        what = "own changes onto the rewritten" if rewrite else "merge"
        message = commit_message(f"kb sync: {what} {upstream.removeprefix('refs/remotes/')}", "sync")
        work.git.commit("--quiet", "--no-verify", "--allow-empty", "-m", message)
        return work.head.commit.hexsha


def _replayed(repo: git.Repo, work: git.Repo, base: str, head: str) -> bool:
    """This clone's own commits since base, each replayed onto the rewritten head as it was (its message,
    kb-op trailers and author kept, so kb log still shows each operation); False, with the worktree as it
    was, when one does not apply cleanly or a merge is among them (the field-by-field merge then takes them
    together)."""
    own = repo.git.rev_list("--reverse", "--topo-order", f"{base}..{head}").split()
    if not own or repo.git.rev_list("--merges", f"{base}..{head}").strip():
        return False
    start = work.head.commit.hexsha
    try:
        work.git.cherry_pick("--allow-empty", "--keep-redundant-commits", *own)
    except git.GitCommandError:
        with contextlib.suppress(git.GitCommandError):
            work.git.cherry_pick("--abort")
        work.git.reset("--hard", "--quiet", start)
        return False
    return True


def _place(work: git.Repo, place: Path, rel: str, resolved: str | None) -> None:
    target = place / rel
    if resolved is None:
        work.git.rm("--quiet", "--force", "--ignore-unmatch", "--", rel)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(resolved, encoding="utf-8")
        work.git.add("--", rel)


def _show(repo: git.Repo, rev: str, rel: str) -> str | None:
    try:
        return str(repo.git.show(f"{rev}:{rel}", strip_newline_in_stdout=False))
    except git.GitCommandError:
        return None  # not there on that side


def _resolve(repo: git.Repo, rel: str, base: str, head: str, theirs: str, takes: list[Take]) -> str | None:
    """The file both sides changed, merged; None when both deleted it; Unmergeable otherwise."""
    old, ours, other = _show(repo, base, rel), _show(repo, head, rel), _show(repo, theirs, rel)
    if ours == other or other == old:
        return ours
    if ours == old:
        return other
    if rel == LOCK_FILE:
        return merge_lock(old, ours or "", other or "", takes)
    key = Path(rel).stem if CARD_FILE.match(rel) else rel  # what --take SIDE:KEY:file names
    if ours is None or other is None:
        side = taken_side(takes, rel, key, (WHOLE_FILE,))
        if side is not None:
            return ours if side == "ours" else other
        shown = ("deleted", "changed") if ours is None else ("changed", "deleted")
        raise Unmergeable([Clash(rel, WHOLE_FILE, *shown, key)])
    if CARD_FILE.match(rel):
        return merge_card(rel, old, ours, other, _later(repo, rel, head, theirs), takes)
    if rel.startswith("runs/") and rel.endswith(".jsonl"):
        return merge_log(old, ours, other)
    text = merge_text(old or "", ours, other)
    if text is None:
        side = taken_side(takes, rel, key, (WHOLE_FILE,))
        if side is None:
            raise Unmergeable([text_clash(rel, WHOLE_FILE, old or "", ours, other, key)])
        text = ours if side == "ours" else other
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
