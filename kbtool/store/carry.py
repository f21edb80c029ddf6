"""A card carried between two knowledge bases, merged three ways field by field.

Two commands carry one: `kb import --from-kb` again (the origin's changes into a copy) and `kb promote` (a
project's card up into the team's). The merge (kbtool.store.merge) is there so that neither side's edits are
lost; a field both sides changed differently writes nothing, unless `--take ours` or `--take theirs` settles
it. The base is the card as it stood when it was last carried: the origin's file at the commit the copy
records (provenance.origin.commit), fetched first where a shallow clone lacks it. Without a base, every field
the two differ in is a clash."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import git

from kbtool.model.errors import BadInput, CheckFailed
from kbtool.store.merge import TWO_CARDS, Clash, Unmergeable, merge_card

SIDES = ("ours", "theirs")


class CarryConflict(CheckFailed):
    """Both knowledge bases changed a field of a card differently; nothing was written."""

    def __init__(self, clashes: list[Clash], ours: str, theirs: str, retry: str):
        """ours, theirs: where each side's value is ("here", "in /path/team"); retry: the command to run again."""
        shown = "; ".join(f"{c.path}: {c.field}: {ours} {c.ours}, {theirs} {c.theirs}" for c in clashes)
        if all(c.field == TWO_CARDS for c in clashes):  # a take chooses a field's value, never one of two cards
            advice = f"no --take makes two cards one: rename the one here, then {retry}"
            super().__init__(f"nothing written: {shown}; {advice}")
        else:
            super().__init__(
                f"{len(clashes)} field(s) changed differently on both sides; nothing written: {shown}; settle it by "
                f"an edit on either side, or take one side for every such field: {retry} --take ours (the value "
                f"{ours}) or --take theirs (the value {theirs})"
            )
        self.clashes = clashes


@dataclass(frozen=True)
class Promoted:
    """What `kb promote` did: the card, the knowledge base it went to, and the commits on both sides."""

    card: str
    to: str
    commit: str | None  # the team knowledge base's commit; None when it held this card as it is already
    recorded: str | None  # this knowledge base's commit recording the promotion (provenance.origin)
    merged: bool  # the team had changed the card since it was last promoted: both sides' edits kept

    def to_dict(self) -> dict[str, object]:
        return {
            "card": self.card,
            "to": self.to,
            "commit": self.commit,
            "recorded": self.recorded,
            "merged": self.merged,
        }

    def line(self) -> str:
        if self.commit is None:
            return f"{self.card}: {self.to} holds it as it is already; nothing written there"
        how = ", merged with the team's edits since" if self.merged else ""
        return f"{self.card}: promoted to {self.to} ({self.commit[:12]}){how}; push it there (kb sync)"


def checked_side(take: str | None) -> str | None:
    if take is not None and take not in SIDES:
        raise BadInput(f"--take {take}: ours or theirs")
    return take


def text_at(repo: git.Repo, commit: str, rel: str) -> str | None:
    """The file rel at commit; a shallow clone (a git origin) lacking the commit fetches it first; None when it is
    not there (the file or the commit gone)."""
    try:
        return str(repo.git.show(f"{commit}:{rel}", strip_newline_in_stdout=False))
    except git.GitCommandError:
        if not (Path(repo.git_dir) / "shallow").is_file():
            return None
    try:
        repo.git.fetch("--quiet", "--depth=1", "origin", commit)
        return str(repo.git.show(f"{commit}:{rel}", strip_newline_in_stdout=False))
    except git.GitCommandError:
        return None


def changed_at(repo: git.Repo, rel: str) -> int:
    """When rel last changed in repo's history (a commit time; 0 when never)."""
    try:
        return int(repo.git.log("-1", "--format=%ct", "--", rel) or 0)
    except git.GitCommandError:
        return 0


def uncommitted(repo: git.Repo, writes: list[str]) -> list[str]:
    """What a carry must not commit along with its own change: every tracked file changed and not committed
    (staged or not), and any untracked file at a path it writes."""
    changed = [line[3:] for line in repo.git.status("--porcelain", "--untracked-files=no").splitlines()]
    tracked = set(repo.git.ls_files("--", *writes).splitlines()) if writes else set()
    root = Path(repo.working_dir)
    return changed + [rel for rel in writes if rel not in tracked and (root / rel).exists()]


def carried(name: str, base: str | None, ours: str, theirs: str, later: str, take: str | None) -> str:
    """ours with theirs' changes since base, field by field; Unmergeable names each clash (unless take
    settles every clash for one side). Without a base every field the two differ in is a clash."""
    if ours == theirs or theirs == base:
        return ours
    if base == ours:
        return theirs
    return merge_card(name, base, ours, theirs, later, settle=take)


__all__ = [
    "CarryConflict",
    "Promoted",
    "Unmergeable",
    "carried",
    "changed_at",
    "checked_side",
    "text_at",
    "uncommitted",
]
