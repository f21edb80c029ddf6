"""A knowledge base's own rules for its cards, beyond kb's models: JSON Schemas kb.toml names.

    [schema]
    finding = ["policy/finding.schema.json"]   # every finding here must also satisfy this
    "*" = ["policy/every-card.schema.json"]    # and every card, this

A team states what its cards must say ("every finding names applies_to.hardware and
applies_to.model", its own applies_to keys as an enum, a tag vocabulary) without changing kb.
Each schema is applied, after the built-in model, to the card's frontmatter as JSON (what
`kb show --json` prints without the body): on every write, import and MCP call, and by
`kb lint`. Cards on their way out (refuted, superseded, retired) are not held to it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kbtool.model.cards import CardBase
from kbtool.model.errors import InvalidCard
from kbtool.model.parsing import Unparsable, json_document
from kbtool.model.validation import field_path
from kbtool.model.vocabulary import CONFIG_FILE, INACTIVE_STATUSES, KINDS

EVERY_KIND = "*"


@dataclass
class Policy:
    """The validators kb.toml's [schema] names, per kind ("*": every kind)."""

    rules: dict[str, list[tuple[str, Any]]] = field(default_factory=dict)  # kind -> [(schema path, validator)]

    @classmethod
    def load(cls, root: Path, table: dict[str, list[str]]) -> Policy:
        """Read and check every schema; a missing, unreadable or invalid one is a kb.toml error."""
        if not table:
            return cls()
        from jsonschema import Draft202012Validator, exceptions

        rules: dict[str, list[tuple[str, Any]]] = {}
        for kind, paths in table.items():
            if kind != EVERY_KIND and kind not in KINDS:
                raise InvalidCard(f"{CONFIG_FILE}: schema.{kind}: not a kind ({', '.join(KINDS)}) or {EVERY_KIND!r}")
            for rel in paths:
                where = f"{CONFIG_FILE}: schema.{kind}: {rel}"
                path = (root / rel).resolve()
                if not path.is_relative_to(root.resolve()):
                    raise InvalidCard(f"{where}: outside the knowledge base")
                try:
                    schema = json_document(path.read_text(encoding="utf-8"))
                except FileNotFoundError:
                    raise InvalidCard(f"{where}: no such file") from None
                except (OSError, UnicodeDecodeError, Unparsable) as exc:
                    raise InvalidCard(f"{where}: not a JSON file ({exc})") from None
                outside = _refs_outside(schema)
                if outside is not None:
                    raise InvalidCard(
                        f"{where}: $ref {outside!r} points outside the file, and kb fetches nothing; put the "
                        "definition under $defs and refer to it as #/$defs/NAME"
                    )
                try:
                    Draft202012Validator.check_schema(schema)
                except exceptions.SchemaError as exc:
                    raise InvalidCard(f"{where}: not a valid JSON Schema ({exc.message})") from None
                except RecursionError:
                    raise InvalidCard(f"{where}: nested too deeply to read") from None
                rules.setdefault(kind, []).append((rel, Draft202012Validator(schema)))
        return cls(rules)

    def problems(self, card: CardBase) -> list[str]:
        """What the card breaks, each 'field.path: what is wrong (schema file)'; none for a card on its way out."""
        if card.status in INACTIVE_STATUSES:
            return []
        data = card.model_dump(mode="json", exclude_none=True)
        out: list[str] = []
        from referencing.exceptions import Unresolvable

        for rel, validator in [*self.rules.get(EVERY_KIND, []), *self.rules.get(card.kind, [])]:
            try:
                errors = sorted(validator.iter_errors(data), key=lambda e: (list(e.absolute_path), e.message))
            except Unresolvable as exc:  # a $ref to a place in the file that is not there
                raise InvalidCard(f"{CONFIG_FILE}: schema: {rel}: a $ref does not resolve ({exc})") from None
            for error in errors:
                out += [f"{line} ({rel})" for line in _describe(error)]
        return list(dict.fromkeys(out))  # one `required` error per missing name, each naming them all

    def check(self, card: CardBase, origin: str) -> None:
        found = self.problems(card)
        if found:
            raise InvalidCard(f"{origin}: " + "; ".join(found))


def _refs_outside(schema: Any) -> str | None:
    """The first $ref (or $dynamicRef) that is not a pointer into the schema itself (#...): another file or
    a URL, which jsonschema would try to fetch. Walked without recursion: the schema may nest deeply."""
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str) and not value.startswith("#"):
                    return value
                stack.append(value)
        elif isinstance(node, list):
            stack.extend(node)
    return None


def _describe(error: Any) -> list[str]:
    """'applies_to.hardware: required by this knowledge base' rather than jsonschema's "'hardware' is a
    required property"."""
    path = list(error.absolute_path)
    if error.validator == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        return [f"{field_path((*path, name))}: required by this knowledge base" for name in missing]
    where = field_path(tuple(path))
    return [f"{where}: {error.message}" if where else error.message]
