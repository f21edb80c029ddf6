"""`key=value` assignments and filters from the command line, typed by the card models.

`--field check.threshold=12` becomes {"check": {"threshold": 12.0}} because the model says
threshold is a float; `--field tags=a --field tags=b` becomes a list because tags is a list;
`--field evidence.0.value=1.5` addresses list items by index. An unknown key or a value of
the wrong type is refused here, naming the flag, before any card is built.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError

from kbtool.model.cards import MODELS, CardBase
from kbtool.model.errors import InvalidField
from kbtool.model.validation import describe_error

# Set by kb itself; an assignment to them would break the store's invariants (file stem = id).
RESERVED = frozenset({"id", "kind", "schema_version"})


def _strip_annotated(ann: Any) -> Any:
    while typing.get_origin(ann) is typing.Annotated:
        ann = typing.get_args(ann)[0]
    return ann


def _members(ann: Any) -> list[Any]:
    """Union members without None, each stripped of Annotated."""
    ann = _strip_annotated(ann)
    if typing.get_origin(ann) in (typing.Union, types.UnionType):
        return [_strip_annotated(a) for a in typing.get_args(ann) if a is not type(None)]
    return [ann]


def _is_model(ann: Any) -> bool:
    return isinstance(ann, type) and issubclass(ann, BaseModel)


def _list_member(ann: Any) -> Any | None:
    for m in _members(ann):
        if typing.get_origin(m) is list:
            return m
    return None


def annotation_at(model: type[BaseModel], parts: list[str], key: str, through_lists: bool = False) -> Any:
    """The type the model declares at a dotted path, or InvalidField naming the path.

    through_lists: a filter's `evidence.metric` means "the metric of any evidence item".
    """
    ann: Any = model
    for depth, part in enumerate(parts):
        listed = _list_member(ann)
        if through_lists and listed is not None and not part.isdigit():
            ann = typing.get_args(listed)[0]
        members = _members(ann)
        here = ".".join(parts[:depth]) or "a card"
        nested = next((m for m in members if _is_model(m)), None)
        if nested is not None:
            if part not in nested.model_fields:
                known = ", ".join(nested.model_fields)
                raise InvalidField(f"{key}: {here} has no field {part!r} (fields: {known})")
            ann = nested.model_fields[part].annotation
            continue
        listed = _list_member(ann)
        if listed is not None and part.isdigit():
            ann = typing.get_args(listed)[0]
            continue
        mapping = next((m for m in members if typing.get_origin(m) is dict), None)
        if mapping is not None:
            ann = typing.get_args(mapping)[1]
            continue
        raise InvalidField(f"{key}: {here} has no sub-field {part!r}")
    return ann


def _coerce_scalar(ann: Any, value: str, key: str) -> Any:
    members = _members(ann)
    if any(_is_model(m) for m in members):
        raise InvalidField(f"{key}: is a group of fields; set its parts, e.g. {key}.<field>=...")
    if value == "" and type(None) in typing.get_args(_strip_annotated(ann)):
        return None
    # "32" for a str-or-number field means the number: try the numeric members first
    ordered = sorted(members, key=lambda m: 0 if m in (int, float) else 1)
    errors = []
    for member in ordered:
        try:
            return TypeAdapter(member).validate_python(value, strict=False)
        except ValidationError as exc:
            errors.extend(exc.errors())
    raise InvalidField(f"{key}: {describe_error(errors[0]) if errors else repr(value) + ' is not accepted'}")


def coerce_values(ann: Any, values: list[str], key: str) -> Any:
    listed = _list_member(ann)
    if listed is not None and (len(values) > 1 or not any(typing.get_origin(m) is not list for m in _members(ann))):
        item = typing.get_args(listed)[0]
        return [_coerce_scalar(item, v, key) for v in values]
    if len(values) > 1:
        raise InvalidField(f"{key}: given {len(values)} times but takes one value")
    return _coerce_scalar(ann, values[0], key)


def split_pairs(pairs: Iterable[str], flag: str) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        key = key.strip()
        if not sep or not key:
            raise InvalidField(f"{flag} {pair!r}: expected key=value")
        grouped.setdefault(key, []).append(value)
    return grouped


def _put(target: dict[Any, Any], parts: list[str], value: Any) -> None:
    for part in parts[:-1]:
        key: Any = int(part) if part.isdigit() else part
        target = target.setdefault(key, {})
    last = parts[-1]
    target[int(last) if last.isdigit() else last] = value


def parse_assignments(pairs: Iterable[str], model: type[CardBase]) -> dict[str, Any]:
    """Typed nested updates; list items addressed by index appear as {index: {...}} (see merge)."""
    update: dict[str, Any] = {}
    for key, values in split_pairs(pairs, "--field").items():
        parts = key.split(".")
        if parts[0] in RESERVED:
            raise InvalidField(f"--field {key}: {parts[0]} is set by kb, not by a field")
        ann = annotation_at(model, parts, f"--field {key}")
        _put(update, parts, coerce_values(ann, values, f"--field {key}"))
    return update


def merge(base: Any, update: Any) -> Any:
    """Deep-merge an update into card data; {0: {...}} merges into item 0 of a list."""
    if isinstance(update, dict) and update and all(isinstance(k, int) for k in update):
        items = list(base) if isinstance(base, list) else []
        for index in sorted(update):
            if index < len(items):
                items[index] = merge(items[index], update[index])
            elif index == len(items):
                items.append(merge({}, update[index]))
            else:
                raise InvalidField(f"--field: list index {index} skips past the end (next is {len(items)})")
        return items
    if isinstance(update, dict) and isinstance(base, dict):
        out = dict(base)
        for k, v in update.items():
            out[k] = merge(base.get(k), v)
        return out
    if isinstance(update, dict):
        return merge({}, update)
    return update


@dataclass(frozen=True)
class Filter:
    """`--where applies_to.hardware=B200`: the card's value at the path equals (or contains) the value;
    `--where applies_to.modality!=vision` (negate): it does not, which a card not scoped on it meets too."""

    path: tuple[str, ...]
    value: str
    negate: bool = False

    def matches(self, data: Any) -> bool:
        return any(_equal(v, self.value) for v in values_at(data, self.path)) != self.negate


def values_at(data: Any, path: tuple[str, ...]) -> list[Any]:
    """Every value at a dotted path, looking through lists (evidence.metric: each item's metric)."""
    if not path:
        return list(data) if isinstance(data, list) else [data]
    if isinstance(data, list):
        return [v for item in data for v in values_at(item, path)]
    if isinstance(data, dict) and path[0] in data:
        return values_at(data[path[0]], path[1:])
    return []


def _equal(have: Any, want: str) -> bool:
    if isinstance(have, bool):
        return str(have).lower() == want.lower()
    return str(have).casefold() == want.casefold()


def card_conditions(
    kind: str | None, status: str | None, tags: Iterable[str], filters: Iterable[Filter]
) -> list[Filter]:
    """Every narrowing a list or a search asks for, as filters all to be met."""
    return (
        list(filters)
        + ([Filter(("kind",), kind)] if kind else [])
        + ([Filter(("status",), status)] if status else [])
        + [Filter(("tags",), t) for t in tags]
    )


def parse_filters(pairs: Iterable[str], flag: str = "--where") -> list[Filter]:
    """Filters on any field of any kind from `field=value` strings (the CLI's --where, a daemon or --batch
    request); a path no kind declares is an error, not an empty result. `flag` names the filters in errors."""
    filters: list[Filter] = []
    for key, values in split_pairs(pairs, flag).items():
        parts, negate = _filtered_path(key, flag)
        filters.extend(Filter(parts, v, negate) for v in values)
    return filters


def filters_from(given: Mapping[str, Any], flag: str = "where") -> list[Filter]:
    """Filters from a mapping of field path -> one value ({"applies_to.hardware": "B200"}, as MCP and Python
    give them; a key ending in ! negates), never turned into `field=value` text; a value is a string, a number
    or a boolean."""
    filters: list[Filter] = []
    for key, value in given.items():
        parts, negate = _filtered_path(str(key), flag)
        if not isinstance(value, str | int | float | bool):
            raise InvalidField(
                f"{flag} {key}: give one value (a string, number or boolean), not {type(value).__name__}"
            )
        filters.append(Filter(parts, str(value).lower() if isinstance(value, bool) else str(value), negate))
    return filters


def _filtered_path(key: str, flag: str) -> tuple[tuple[str, ...], bool]:
    """A filter's field path and whether it negates (FIELD!=VALUE: split at the first '=' leaves the '!' on the
    key); InvalidField when no card kind declares the path."""
    negate = key.strip().endswith("!")
    key = key.strip().removesuffix("!").strip()
    parts = key.split(".")
    if not key or not any(_declares(model, parts) for model in MODELS.values()):
        raise InvalidField(f"{flag} {key}: no card kind has the field {key!r}")
    return tuple(parts), negate


def filters_of(where: Iterable[str | Filter], flag: str = "--where") -> list[Filter]:
    """Filters as callers hold them: `field=value` strings parsed (parse_filters), parsed ones kept as they are
    (a mapping is filters_from's, read by the contracts' Filters field)."""
    given = list(where)
    pairs = [w for w in given if isinstance(w, str)]
    return [w for w in given if isinstance(w, Filter)] + (parse_filters(pairs, flag) if pairs else [])


def _declares(model: type[BaseModel], parts: list[str]) -> bool:
    try:
        annotation_at(model, [p for p in parts if not p.isdigit()], "", through_lists=True)
    except InvalidField:
        return False
    return True


def drop_none(data: dict[str, Any]) -> dict[str, Any]:
    """data without its None values, at every depth of nested mappings: a card's file leaves them out."""
    return {k: (drop_none(v) if isinstance(v, dict) else v) for k, v in data.items() if v is not None}
