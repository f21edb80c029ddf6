"""What changed in a knowledge base, read from git's log and kb's commit trailers.

Every kb write is one commit whose trailers say what it did (kb-op) and which agent did it (kb-agent), so
"what did the last agent learn?" is a git log read, nothing stored. This module holds the parts of that read: which
commits `since` means (an age, a date or a commit), which card or skill a changed file belongs to, and the
reason a commit's body gives."""

from __future__ import annotations

import re
from datetime import date

from kbtool.model.contracts import SEARCH_KINDS, Change, ChangedCard, CommitEntry
from kbtool.model.errors import BadInput, UnknownKind
from kbtool.store.git_log import Commit
from kbtool.store.repository import CARDS_DIR, SKILLS_DIR, Store

_AGE = re.compile(r"^(\d+)\s*(h|d|w)$")
_UNITS = {"h": "hours", "d": "days", "w": "weeks"}
_CHANGES = {"A": "added", "M": "modified", "D": "deleted"}


def since_revisions(since: str | None, store: Store) -> list[str]:
    """git log's arguments for `since`: all history, an age, a date, or the commits after a commit."""
    if since is None or not since.strip():
        return []
    text = since.strip()
    age = _AGE.match(text.lower())
    if age:
        return [f"--since={age.group(1)} {_UNITS[age.group(2)]} ago"]
    try:
        day = date.fromisoformat(text)
    except ValueError:
        pass
    else:  # git's date reader gives up past 2099 and then filters nothing: a future date has no changes
        return ["--max-count=0"] if day > date.today() else [f"--since={day.isoformat()} 00:00:00 +0000"]
    if re.fullmatch(r"[0-9a-fA-F]{4,40}|HEAD[~^0-9]*", text) and store.is_commit(text):
        return [f"{text}..HEAD"]
    raise BadInput(
        f"since {since!r}: expected a date (2026-12-01), an age (12h, 7d, 2w) or a commit of this knowledge base"
    )


def changed_card(status: str, path: str, titles: dict[str, str]) -> ChangedCard | None:
    """The card (kb/KIND/ID.md) or skill (skills/NAME/...) a changed file belongs to, or None."""
    parts = path.split("/")
    if parts[0] == CARDS_DIR and len(parts) == 3 and parts[2].endswith(".md") and parts[1] in SEARCH_KINDS:
        card_id, kind = parts[2][:-3], parts[1]
    elif parts[0] == SKILLS_DIR and len(parts) >= 3:
        card_id, kind = parts[1], "skill"
    else:
        return None
    # a skill is added or deleted with its SKILL.md; another file of it changing modifies it
    whole = kind != "skill" or parts[2] == "SKILL.md"
    change = _CHANGES.get(status, "modified") if whole else "modified"
    return ChangedCard(id=card_id, kind=kind, change=change, title=titles.get(card_id))


def recent_changes(
    store: Store, since: str | None, kind: str | None, titles: dict[str, str], limit: int | None = None
) -> list[Change]:
    """Each commit after `since` that changed a card (of `kind`, when given) or skill, newest first (the
    newest `limit` of them, when given)."""
    if kind is not None and kind not in SEARCH_KINDS:
        raise UnknownKind(f"kind {kind!r}: not one of {', '.join(SEARCH_KINDS)}")
    paths = [SKILLS_DIR if kind == "skill" else f"{CARDS_DIR}/{kind}"] if kind else [CARDS_DIR, SKILLS_DIR]
    out = []
    revisions = since_revisions(since, store) + ([f"--max-count={limit}"] if limit else [])
    for commit, files in store.changes(revisions, paths):
        cards: dict[str, ChangedCard] = {}
        for status, path in files:
            card = changed_card(status, path, titles)
            if card is not None and card.id not in cards:
                cards[card.id] = card
        if cards:
            out.append(Change(**dict(commit_entry(commit)), cards=list(cards.values())))
    return out


def commit_reason(message: str) -> str | None:
    """The body of a kb commit message (kbtool/store/commits.py): what comes between the subject and the kb-
    trailers, the reason given to supersede, refute, retire or reopen; None when there is none."""
    _, _, rest = message.partition("\n")
    kept = [line for line in rest.strip().splitlines() if not line.startswith("kb-")]
    return "\n".join(kept).strip() or None


def commit_entry(commit: Commit) -> CommitEntry:
    """A commit as the answers show it, with what kb did and the agent that did it read from its kb-op and
    kb-agent trailers."""
    trailers = {key: value.strip() for key, _, value in (line.partition(": ") for line in commit.message.splitlines())}
    return CommitEntry(
        sha=commit.sha,
        date=commit.date,
        author=commit.author,
        subject=commit.subject,
        op=trailers.get("kb-op"),
        agent=trailers.get("kb-agent") or None,
    )
