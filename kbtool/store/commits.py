"""The commit messages kb writes: a subject, an optional body, and trailers for tools.

The subject is for people (`kb add finding: TITLE` for a card); the body, when there is one, holds a reason or
where an import came from; the trailers (`kb-op: add`, `kb-id: ...`) are for tools: `kb log`, history and sync
read them back. Every write of kb builds its message here, so the trailers are spelled one way. A reason may
hold no control character, as git log prints a message as it is."""

from __future__ import annotations

from kbtool.model.cards import CardBase, control_character
from kbtool.model.errors import BadInput


def checked_reason(reason: str | None) -> str | None:
    """A reason goes into a commit message, which git log prints as it is: no control character in it."""
    found = control_character(reason) if reason else None
    if found:
        raise BadInput(f"the reason holds the control character {found}, which a commit message may not")
    return reason


def commit_message(subject: str, op: str, body: str | None = None, **trailers: str | None) -> str:
    """`subject`, a blank line, body (when there is one) and a blank line, then `kb-op: op` and one
    `kb-KEY: value` trailer for each given value (KEY with - for _; None left out)."""
    lines = [f"kb-op: {op}"] + [f"kb-{key.replace('_', '-')}: {value}" for key, value in trailers.items() if value]
    text = body.strip() if body else ""
    return f"{subject}\n\n" + (f"{text}\n\n" if text else "") + "\n".join(lines) + "\n"


def card_message(op: str, card: CardBase, body: str | None = None, **trailers: str | None) -> str:
    """The message of a write of one card: `kb OP KIND: TITLE`, with its kind and id as trailers."""
    return commit_message(f"kb {op} {card.kind}: {card.title}", op, body, kind=card.kind, id=card.id, **trailers)
