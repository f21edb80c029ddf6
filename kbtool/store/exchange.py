"""Cards as JSON Lines, for `kb export --format jsonl` and `kb import FILE.jsonl`: one card a line,
`{"card": {frontmatter fields}, "body": "markdown"}`, in path order (with `"applies"` when the export was
for an environment). Lossless both ways: a card
read back renders to the very text it was exported from (dates travel as ISO strings and are read
back as dates)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import date, datetime
from typing import Any

from kbtool.model import markdown
from kbtool.model.cards import CardBase
from kbtool.model.errors import BadInput, KbError
from kbtool.model.parsing import Unparsable, json_document
from kbtool.model.records import StoredCard
from kbtool.model.validation import validate_card

FORMATS = ("jsonl",)


def _iso(value: Any) -> str:
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def export_lines(cards: Iterable[StoredCard], applies: dict[str, str] | None = None) -> Iterator[str]:
    """One line a card, in the order given; with applies (id -> how it applies to the environment the
    export is for), each line says so beside the card (an import reads past it)."""
    for stored in cards:
        record: dict[str, Any] = {"card": markdown.card_data(stored.card), "body": stored.body}
        if applies and stored.id in applies:
            record["applies"] = applies[stored.id]
        yield json.dumps(record, ensure_ascii=False, default=_iso)


def read_lines(text: str, origin: str, max_bytes: int) -> list[tuple[CardBase, str]]:
    """Every card of a JSON Lines export, each checked; BadInput names the first bad line (nothing is kept)."""
    if len(text.encode()) > max_bytes:
        raise BadInput(f"{origin}: over the import limit of {max_bytes:,} bytes (kb.toml [limits] import_bytes)")
    out: list[tuple[CardBase, str]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{origin}:{number}"
        try:
            record = json_document(line)
        except Unparsable as exc:
            raise BadInput(f"{where}: not JSON ({exc})") from None
        if not isinstance(record, dict) or not isinstance(record.get("card"), dict):
            raise BadInput(f'{where}: expected {{"card": {{...}}, "body": "..."}}')
        extra = set(record) - {"card", "body", "applies"}
        if extra:
            raise BadInput(f"{where}: unknown key {sorted(extra)[0]!r}; a line holds card and body")
        body = record.get("body", "")
        if not isinstance(body, str):
            raise BadInput(f"{where}: body is not text")
        try:
            card = validate_card(record["card"], where, from_json=True)
        except KbError as exc:
            raise BadInput(str(exc)) from None
        if card.id in seen:
            raise BadInput(f"{where}: card {card.id!r} again (first on line {seen[card.id]})")
        seen[card.id] = number
        out.append((card, body))
    return out
