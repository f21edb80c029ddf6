"""Turn card data into a validated model, with errors that name the file, the field and what was expected."""

from __future__ import annotations

import json
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from kbtool.model import evidence_layout
from kbtool.model.cards import KINDS, MODELS, CardBase, first_control_character
from kbtool.model.errors import InvalidCard, UnknownKind

# pydantic error types -> what a person reading the message needs to hear
_EXPECTED = {
    "float_type": "is not a number",
    "float_parsing": "is not a number",
    "int_type": "is not an integer",
    "int_parsing": "is not an integer",
    "int_from_float": "is not an integer",
    "string_type": "is not a string",
    "bool_type": "is not true or false",
    "bool_parsing": "is not true or false",
    "date_type": "is not a date (YYYY-MM-DD, unquoted in YAML)",
    "date_parsing": "is not a date (YYYY-MM-DD)",
    "date_from_datetime_parsing": "is not a date (YYYY-MM-DD)",
    "list_type": "is not a list",
    "dict_type": "is not a mapping",
    "model_type": "is not a mapping of fields",
    "model_attributes_type": "is not a mapping of fields",
}


def field_path(loc: tuple[Any, ...]) -> str:
    """('evidence', 0, 'value') -> 'evidence[0].value'."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _clean_loc(loc: tuple[Any, ...]) -> tuple[Any, ...]:
    # pydantic adds the union member it tried ("str", "list[str]") to the location; drop those
    return tuple(
        p for p in loc if not (isinstance(p, str) and ("[" in p or p in {"str", "int", "float", "function-after"}))
    )


def describe_error(err: ErrorDetails | dict[str, Any]) -> str:
    kind = err["type"]
    value = err.get("input")
    if kind == "missing":
        return "required field is missing"
    if kind == "extra_forbidden":
        return "unknown field"
    if kind == "literal_error":
        return f"{value!r} is not one of {err.get('ctx', {}).get('expected', '')}"
    if kind == "string_pattern_mismatch":
        return f"{value!r} does not match {err.get('ctx', {}).get('pattern')}"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "value_error":
        return str(err.get("ctx", {}).get("error", err["msg"]))
    if kind in _EXPECTED:
        return f"{value!r} {_EXPECTED[kind]}"
    return err["msg"]


def format_validation_error(exc: ValidationError, origin: str) -> str:
    """One line: 'kb/finding/x.md: evidence[0].value: 'fast' is not a number; title: ...'."""
    seen: list[str] = []
    for err in exc.errors():
        path = field_path(_clean_loc(err["loc"]))
        line = f"{path}: {describe_error(err)}" if path else describe_error(err)
        if line not in seen:
            seen.append(line)
    return f"{origin}: " + "; ".join(seen)


def model_for(kind: str) -> type[CardBase]:
    try:
        return MODELS[kind]
    except KeyError:
        raise UnknownKind(f"unknown kind {kind!r}; expected one of: {', '.join(KINDS)}") from None


def validate_card(data: Any, origin: str, from_json: bool = False) -> CardBase:
    """The card the frontmatter mapping describes, or InvalidCard naming every problem. from_json: the
    mapping came from JSON, where dates are strings (strict validation reads them from JSON text)."""
    if not isinstance(data, dict):
        raise InvalidCard(f"{origin}: frontmatter is not a mapping of fields")
    kind = data.get("kind")
    if kind is None:
        raise InvalidCard(f"{origin}: kind: required field is missing")
    if not isinstance(kind, str) or kind not in MODELS:
        raise InvalidCard(f"{origin}: kind: {kind!r} is not one of {', '.join(KINDS)}")
    # here, not in a model validator: one that sees the data first makes strict JSON validation read dates as text
    control = first_control_character(data)
    if control:
        raise InvalidCard(f"{origin}: {control}, which no card text may (a terminal escape, a NUL)")
    if kind == "finding":
        try:  # a card file writes what evidence entries share once; each entry is whole in memory
            data = evidence_layout.expand(data)
        except ValueError as exc:
            raise InvalidCard(f"{origin}: {exc}") from None
    try:
        if from_json:
            return MODELS[kind].model_validate_json(json.dumps(data), strict=True)
        return MODELS[kind].model_validate(data, strict=True)
    except ValidationError as exc:
        raise InvalidCard(format_validation_error(exc, origin)) from None
