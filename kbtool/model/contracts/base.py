"""The base of every contract (Payload) and the types and limits the contracts share.

Payload is immutable, refuses unknown keys (naming the keys it takes), and is parsed from JSON with every
fault in one line. The shared types are the enums made from kbtool.model.vocabulary's tuples, Strings (one
string is a list of one) and Filters (`field=value` conditions, parsed once where the request is made); the
limits are MAX_K (the hits one search may ask for) and OUTPUT_LIMIT (what a gate's run record keeps of its
command's output)."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Literal, TypeVar

from pydantic import (
    AliasChoices,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    ValidationError,
    ValidationInfo,
)

from kbtool.model.errors import BadInput
from kbtool.model.fields import Filter, filters_of
from kbtool.model.validation import describe_error, field_path
from kbtool.model.vocabulary import DIRECTIONS, KINDS, MODES, STATUSES

if TYPE_CHECKING:
    from typing import Self


MAX_K = 1000  # hits one search may ask for
OUTPUT_LIMIT = 4000  # characters of a gate command's stdout/stderr kept in its run record
T = TypeVar("T")
SEARCH_KINDS = (*KINDS, "skill")  # skills are indexed beside the cards

# Literal[TUPLE]: the enums come from the one tuple each list is kept in; valid at run time, but mypy
# accepts only literal values inside Literal[], hence the ignores
SearchKind = Literal[SEARCH_KINDS]  # type: ignore[valid-type]
StatusName = Literal[STATUSES]  # type: ignore[valid-type]
Mode = Literal[MODES]  # type: ignore[valid-type]
Direction = Literal[DIRECTIONS]  # type: ignore[valid-type]


def _strings(value: Any) -> Any:
    """One string is a list of one: `"tags": "moe"` means `["moe"]`; a JSON list is a tuple here."""
    return (value,) if isinstance(value, str) else tuple(value) if isinstance(value, list) else value


Strings = Annotated[tuple[str, ...], BeforeValidator(_strings)]


def _filters(value: Any, info: ValidationInfo) -> Any:
    """`field=value` and `field!=value` strings, as the CLI, a --batch line, the daemon and MCP send them,
    parsed once into Filters (an unknown field: InvalidField, worded as --where has always said it)."""
    items = (value,) if isinstance(value, str) else value
    if not isinstance(items, (list, tuple)):
        return value  # pydantic says it is not a list
    for n, item in enumerate(items):
        if not isinstance(item, (str, Filter)):
            raise ValueError(f"{info.field_name}[{n}]: {item!r} is not a string")
    return tuple(filters_of(items))


# conditions on any card field, parsed once where the request is made
Filters = Annotated[tuple[Filter, ...], BeforeValidator(_filters)]


class Payload(BaseModel):
    """A value crossing a surface: immutable, no unknown keys, dumped as plain JSON."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=False)
    noun: ClassVar[str] = "field"  # what `parse` calls an unknown key: "unknown search option(s) ..."

    @classmethod
    def parse(cls, data: Any, origin: str | None = None) -> Self:
        """From JSON (a --batch line, --json-input, a daemon or MCP call); BadInput names every fault."""
        where = f"{origin}: " if origin else ""
        if not isinstance(data, dict):
            raise BadInput(f"{where}expected a JSON object")
        accepted = cls.accepted_keys()
        unknown = sorted(set(data) - set(accepted))
        if unknown:
            raise BadInput(f"{where}unknown {cls.noun}(s) {', '.join(unknown)}; expected {', '.join(accepted)}")
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise BadInput(where + _one_line(exc)) from None

    @classmethod
    @functools.cache
    def accepted_keys(cls) -> list[str]:
        keys: list[str] = []
        for name, info in cls.model_fields.items():
            alias = info.validation_alias
            if isinstance(alias, AliasChoices):
                keys += [c for c in alias.choices if isinstance(c, str)]
            else:
                keys.append(info.alias or name)
        return keys

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)


def _one_line(exc: ValidationError) -> str:
    """Every error in one line. A validator's own message already names its field, so it stands alone."""
    seen: list[str] = []
    for err in exc.errors():
        path = field_path(tuple(p for p in err["loc"] if not (isinstance(p, str) and "[" in p)))
        line = describe_error(err) if err["type"] == "value_error" or not path else f"{path}: {describe_error(err)}"
        if line not in seen:
            seen.append(line)
    return "; ".join(seen)
