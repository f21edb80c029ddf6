"""`kb link|supersede|review|confirm|refute|retire|reopen`: what a card means, changed.

`kb link|supersede|review|confirm|refute|retire|reopen`: the commands that change what a card means to
every later search, and the review of what agents wrote (KnowledgeBase.link, supersede, review_queue, confirm,
refute, set_status)."""

from __future__ import annotations

from typing import Annotated

import typer

from kbtool.surfaces.cli.base import (
    AllowSecret,
    CardRef,
    JsonOut,
    KbPath,
    app,
    current_agent,
    open_kb,
    print_json,
    print_written,
)


@app.command()
def link(
    card_id: CardRef,
    targets: Annotated[list[str], typer.Argument(metavar="TO...", help="The cards to link it to (ids or prefixes).")],
    relation: Annotated[
        str, typer.Option(help="related, or contradicts (a result that disagrees with the other card's).")
    ] = "related",
    remove: Annotated[bool, typer.Option("--remove", help="Take these links away instead.")] = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Link a card to others (related or contradicts) or unlink them; one commit (none when nothing changed)."""
    from kbtool.model.contracts import CardEdited

    base = open_kb(kb)
    before = base.get(card_id).version
    stored = base.link(card_id, targets, relation, remove, agent=current_agent())
    edited = CardEdited.of(stored, stored.version != before)
    if as_json:
        print_json(edited.to_json())
    else:
        shown = {
            name: ", ".join(ids) or "-"
            for name, ids in (("related", edited.related), ("contradicts", edited.contradicts))
        }
        typer.echo(f"{edited.id}: related {shown['related']}; contradicts {shown['contradicts']}")


@app.command()
def supersede(
    old: Annotated[str, typer.Argument(help="The card that no longer holds.")],
    new: Annotated[str, typer.Argument(help="The card that replaces it.")],
    reason: Annotated[str | None, typer.Option(help="Why, recorded in the old card and the commit.")] = None,
    allow_secret: AllowSecret = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Mark OLD superseded by NEW: links both ways, one commit; search demotes OLD."""
    old_card, new_card = open_kb(kb, allow_secret).supersede(old, new, reason, agent=current_agent())
    if as_json:
        print_json({"superseded": old_card.to_dict(body=False), "by": new_card.to_dict(body=False)})
    else:
        typer.echo(f"{old_card.id} superseded by {new_card.id}")


@app.command()
def review(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Cards agents wrote that nobody has reviewed yet, oldest first: confirm or refute each."""
    waiting = open_kb(kb).review_queue()
    if as_json:
        print_json([c.to_dict(body=False) for c in waiting])
        return
    for c in waiting:
        typer.echo(
            f"{c.id}  [{c.card.kind}, {c.card.status}]  by {c.card.provenance.agent}, "
            f"{c.card.provenance.created or 'undated'}  {c.card.title}"
        )
    typer.echo(
        f"{len(waiting)} card(s) to review: `kb show ID`, then `kb confirm ID` or `kb refute ID --reason R`"
        if waiting
        else "nothing to review",
        err=True,
    )


@app.command()
def confirm(
    card_id: CardRef,
    reason: Annotated[str | None, typer.Option(help="What you checked, recorded in the commit.")] = None,
    allow_secret: AllowSecret = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Vouch for a card (an agent's, typically): status confirmed, you as reviewer; one commit."""
    print_written(open_kb(kb, allow_secret).confirm(card_id, reason, agent=current_agent()), as_json)


def _status_command(name: str, reason_help: str, doc: str, status: str | None) -> None:
    """Register `kb NAME ID --reason R`: a card's status set (refuted through refute(), which records the
    reviewer), the reason in the commit. refute, retire and reopen differ only in these."""

    def command(
        card_id: CardRef,
        reason: Annotated[str, typer.Option(help=reason_help)],
        allow_secret: AllowSecret = False,
        kb: KbPath = None,
        as_json: JsonOut = False,
    ) -> None:
        base = open_kb(kb, allow_secret)
        agent = current_agent()
        written = (
            base.refute(card_id, reason, agent=agent)
            if status is None
            else base.set_status(card_id, status, reason, agent=agent)
        )
        print_written(written, as_json)

    command.__doc__ = doc
    # this module's annotations are strings, read in its globals, where reason_help is not: the help goes in as
    # the annotation itself
    command.__annotations__["reason"] = Annotated[str, typer.Option(help=reason_help)]
    app.command(name)(command)


_status_command(
    "refute",
    "Why it does not hold, recorded in the commit.",
    "Reject a card: status refuted (search demotes it, packs leave it out), you as reviewer; one commit.",
    None,
)
_status_command(
    "retire",
    "Why it no longer applies, recorded in the commit.",
    "Retire a card that no longer applies (search demotes it, packs leave it out); one commit.",
    "retired",
)
_status_command(
    "reopen",
    "Why the question is open again, recorded in the commit.",
    "Reopen a gap: what closed it is cleared (the findings keep their links); one commit.",
    "open",
)
