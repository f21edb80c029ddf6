"""Reading git log: each commit's fields, and what git prints after them (a patch, the files it touched).

One format for every reader: a record opens with \\x1e, its fields are separated by \\x1f, and \\x1d closes
them, so a commit message (which may hold any other character) never splits a record."""

from __future__ import annotations

from dataclasses import dataclass

FORMAT = "--format=%x1e%H%x1f%aI%x1f%an%x1f%s%x1f%B%x1d"


@dataclass(frozen=True)
class Commit:
    sha: str
    date: str
    author: str
    subject: str
    message: str


def records(out: str) -> list[tuple[Commit, str]]:
    """Each commit of `git log FORMAT ...`'s output, newest first, with what followed its fields."""
    found = []
    for record in out.split("\x1e")[1:]:
        head, _, rest = record.partition("\x1d")
        sha, date, author, subject, message = head.split("\x1f")
        found.append((Commit(sha, date, author, subject, message.strip()), rest))
    return found
