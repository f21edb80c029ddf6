"""kb.lock through its history: the gates it has held, and entries changed other than by a relock.

A lock is only worth something if nobody can move it to what a changed gate now says. Checking the files
against kb.lock catches an edited script; it does not catch a script edited together with its hash in
kb.lock, in one commit made by hand or arriving from a teammate's clone. The history does: walking the
commits that touched kb.lock (oldest first, over git's simplified history of that one file, so a merge that
took one side's kb.lock follows that side), each gate's entry is followed from commit to commit. An entry
may appear (the first lock of a gate), stay as a parent had it, return to the last entry a legitimate lock
gave it (a revert, or `kb gate lock` putting back a dropped entry), gain the files of a lock made before kb
locked files, or change in a commit whose trailers say `kb-op: gate-relock` for that gate. Any other
change is tampering, named with its commit, until a relock or a revert makes the entry legitimate again.

Trailers are text: an agent with a shell can write a commit that says gate-relock. What that buys it is a
commit in `kb log` with its name as author and a reason, which a person reviews (docs/experiment-loop.md);
what the walk stops is the silent route: a hand edit, a recomputed hash, a commit arriving by sync.

Cost: one `git log` over kb.lock and one `git cat-file --batch` for every version of it. Measured on this
2-core machine: 400 lock and relock commits of 20 gates, 75 ms; of 200 gates, 0.2 s. So no cache on disk;
the facade keeps the answer for its HEAD.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass, field, replace

import git

from kbtool.model.errors import BadInput
from kbtool.store.git_runner import git_reason
from kbtool.store.lock_file import GateLock, parse_lock

RELOCK_OP = "gate-relock"
_OP = re.compile(r"^kb-op:[ \t]*(\S+)[ \t]*$", re.MULTILINE)
_ID = re.compile(r"^kb-id:[ \t]*(\S+)[ \t]*$", re.MULTILINE)


@dataclass(frozen=True)
class Tampering:
    """A commit that changed a gate's kb.lock entry and was not its relock: who, what, and which files."""

    gate: str
    commit: str
    author: str
    subject: str
    files: tuple[str, ...]  # the files whose hashes it changed
    card: bool  # whether it changed the hash of the gate's card

    def changed(self, card_path: str) -> list[str]:
        """What it changed, as paths: the gate's card (when its hash changed) and each file."""
        return [card_path] * self.card + list(self.files)

    def commit_line(self) -> str:
        return f"commit {self.commit[:10]} by {self.author} ({self.subject!r})"

    def message(self, card_path: str) -> str:
        shown = ", ".join(self.changed(card_path)) or "its entry"
        return (
            f"gate {self.gate!r}: {self.commit_line()} changed its kb.lock entry ({shown}) without a `kb gate "
            f"relock`; a lock changes only by a person's relock: revert it (git revert {self.commit[:10]}), or, "
            f"a person who has read the change, `kb gate relock {self.gate} --reason TEXT`"
        )


@dataclass(frozen=True)
class _State:
    """One gate at one commit: its entry there (None: taken out of kb.lock), the commit that gave it the
    last entry it held and that entry, the entry its last legitimate lock gave it, and the tampering that
    made the entry it has now, if any."""

    entry: GateLock | None
    held_at: str
    held: GateLock
    legit: GateLock
    tampered: Tampering | None = None


@dataclass(frozen=True)
class LockHistory:
    """What kb.lock's history says at one commit (see the module)."""

    # every gate it held: (the commit that gave it its last entry, that entry)
    held: dict[str, tuple[str, GateLock]] = field(default_factory=dict)
    committed: dict[str, GateLock] = field(default_factory=dict)  # kb.lock as that commit holds it
    legit: dict[str, GateLock] = field(default_factory=dict)  # each gate's last legitimately locked entry
    tampered: dict[str, Tampering] = field(default_factory=dict)  # gates whose entry tampering made
    unknown: str | None = None  # why the history cannot be checked here (a shallow clone), when it cannot

    def uncommitted(self, gate: str, entry: GateLock) -> bool:
        """Whether kb.lock's entry on disk is a change of a locked gate's entry nobody committed: it differs
        from the committed one, and is not the entry the gate's last legitimate lock gave it."""
        known = self.committed.get(gate) or (self.held[gate][1] if gate in self.held else None)
        return known is not None and entry != known and entry != self.legit.get(gate)


@dataclass(frozen=True)
class _Commit:
    sha: str
    parents: tuple[str, ...]
    author: str
    subject: str
    relocks: str | None  # the gate a `kb gate relock` commit relocked


def lock_history(repo: git.Repo, lock_file: str, rev: str = "HEAD") -> LockHistory:
    """kb.lock's history up to rev (see the module). A repository without commits has none; one kb cannot
    read (a shallow clone, missing objects) says so in unknown rather than failing."""
    try:
        repo.git.rev_parse("--verify", "--quiet", f"{rev}^{{commit}}")
    except git.GitCommandError:
        return LockHistory()  # no commits yet: nothing was ever locked
    try:
        commits = _commits(repo, lock_file, rev)
    except git.GitCommandError as exc:  # objects missing: say so, judge nothing
        return LockHistory(unknown=f"kb cannot read kb.lock's history here ({git_reason(exc)})")
    texts = _texts(repo, [f"{c.sha}:{lock_file}" for c in commits])
    states: dict[str, dict[str, _State]] = {}
    for commit in commits:
        try:
            lock = parse_lock(texts.get(f"{commit.sha}:{lock_file}"))
        except BadInput:
            lock = {}  # a commit whose kb.lock does not parse: its entries read as taken out
        states[commit.sha] = _step(commit, lock, [states[p] for p in commit.parents if p in states])
    tip = states[commits[-1].sha] if commits else {}
    unknown = (
        "this clone is shallow, so kb cannot check kb.lock's history for changes made without a relock "
        "(git fetch --unshallow)"
        if _shallow(repo)
        else None
    )
    return LockHistory(
        held={g: (s.held_at, s.held) for g, s in tip.items()},
        committed={g: s.entry for g, s in tip.items() if s.entry is not None},
        legit={g: s.legit for g, s in tip.items()},
        tampered={g: s.tampered for g, s in tip.items() if s.tampered is not None and s.entry is not None},
        unknown=unknown,
    )


def arriving_tampering(repo: git.Repo, lock_file: str, head: str, target: str) -> list[Tampering]:
    """The tampering at target made by commits head does not have: what a sync would bring in."""
    found = lock_history(repo, lock_file, target).tampered.values()
    if not found:
        return []
    arriving = set(repo.git.rev_list(target, f"^{head}").split())
    return [t for t in found if t.commit in arriving]


def _step(commit: _Commit, lock: dict[str, GateLock], parents: list[dict[str, _State]]) -> dict[str, _State]:
    """Each gate's state at commit, from its kb.lock and its parents' states."""
    out: dict[str, _State] = {}
    for gate in sorted(set(lock).union(*parents)):
        before = [p[gate] for p in parents if gate in p]
        entry = lock.get(gate)
        if entry is None:  # taken out here, or still out: locked all the same (the facade's dropped_locks)
            out[gate] = replace(before[0], entry=None)
            continue
        same = next((s for s in before if s.entry == entry), None)
        if same is not None:  # as a parent had it (a merge that took one side takes that side's state)
            out[gate] = same
            continue
        prior = next((s for s in before if s.entry is not None), before[0] if before else None)
        if (
            prior is None  # the first lock of this gate
            or commit.relocks == gate  # a relock
            or any(entry == s.legit for s in before)  # back to its last legitimate entry
            or _completes(prior, entry)  # the files of a lock made before kb locked files
        ):
            out[gate] = _State(entry, commit.sha, entry, entry)
            continue
        base = prior.entry if prior.entry is not None else prior.legit
        tampering = Tampering(
            gate,
            commit.sha,
            commit.author,
            commit.subject,
            tuple(base.changed_files(entry)),
            base.sha256 != entry.sha256,
        )
        out[gate] = _State(entry, commit.sha, entry, prior.legit, tampering)
    return out


def _completes(prior: _State, entry: GateLock) -> bool:
    """A lock kb wrote before it locked the files a gate runs, given them: the card's hash unchanged, and
    only files added to an entry that held none (and was legitimate)."""
    held = prior.entry
    if held is None or prior.tampered is not None or held.files:
        return False
    return held.sha256 == entry.sha256 and bool(entry.files)


def _commits(repo: git.Repo, lock_file: str, rev: str) -> list[_Commit]:
    """The commits that changed lock_file up to rev, oldest first, with their parents in that history."""
    out = repo.git.log(
        rev, "--topo-order", "--reverse", "--parents", "--format=%x1e%H%x1f%P%x1f%an%x1f%s%x1f%B", "--", lock_file
    )
    commits = []
    for record in out.split("\x1e")[1:]:
        sha, parents, author, subject, body = record.split("\x1f", 4)
        op, ids = _OP.findall(body), _ID.findall(body)
        relocks = ids[-1] if op and op[-1] == RELOCK_OP and ids else None
        commits.append(_Commit(sha, tuple(parents.split()), author, subject, relocks))
    return commits


def _shallow(repo: git.Repo) -> bool:
    try:
        return str(repo.git.rev_parse("--is-shallow-repository")).strip() == "true"
    except git.GitCommandError:
        return False


def _texts(repo: git.Repo, objects: list[str]) -> dict[str, str | None]:
    """{'REV:PATH': its text, or None where that commit has no such file}, from one `git cat-file --batch`."""
    if not objects:
        return {}
    done = subprocess.run(
        ["git", "--git-dir", str(repo.git_dir), "cat-file", "--batch"],
        input="".join(f"{o}\n" for o in objects).encode(),
        capture_output=True,
        check=False,
    )
    data, at = done.stdout, 0
    found: dict[str, str | None] = {}
    for name in objects:
        end = data.find(b"\n", at)
        if end < 0:
            break
        header = data[at:end].split()
        at = end + 1
        if len(header) != 3:  # "REV:PATH missing": deleted in that commit
            found[name] = None
            continue
        size = int(header[2])
        found[name] = data[at : at + size].decode("utf-8", errors="replace")
        at += size + 1
    return found
