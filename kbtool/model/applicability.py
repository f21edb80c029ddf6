"""Whether a card applies to an environment (`--for hardware=H200`), and how.

It is the one judgement search, lists, packs, prompts and new projects share. The environment is kb.toml
[environment] (its `gpu`, as the machine reports it, read as hardware where it names none) with the caller's
`--for` fields over it; a field given as `any` is not judged.

For each field the environment names, a card is
- scoped: its applies_to names that value (hardware: H200);
- family: it names a value of the same family (hardware: H100, a Hopper GPU as the H200 is);
- general: it is not scoped on that field at all (a rule for every GPU);
- other: it is scoped to other values only (hardware: B200 for an H200 project).
A card applies unless some field is `other`; across fields the weakest holds (other, then family, then
scoped, then general). A value kb has no family for is matched exactly, and `unknown_values` names it
so a caller can say so once.

The families are the vendors' own groupings:
- NVIDIA GPU architectures: Hopper (https://www.nvidia.com/en-us/data-center/technologies/hopper-architecture/:
  H100, H200; H800 and H20 are the Hopper parts for China, GH200 the Grace Hopper superchip,
  https://www.nvidia.com/en-us/data-center/grace-hopper-superchip/), Blackwell
  (https://www.nvidia.com/en-us/data-center/technologies/blackwell-architecture/: B200, B100, GB200; B300 and
  GB300 are Blackwell Ultra, https://www.nvidia.com/en-us/data-center/gb300-nvl72/), Ada Lovelace
  (https://www.nvidia.com/en-us/data-center/l40s/ and /l4/: L40S, L40, L4), Ampere
  (https://www.nvidia.com/en-us/data-center/ampere-architecture/: A100, A30, A40, A10, A16, A2; A800 the A100
  for China).
- 4-bit floating-point formats: NVFP4 (https://developer.nvidia.com/blog/introducing-nvfp4-for-efficient-and-
  accurate-low-precision-inference/) and MXFP4 (OCP Microscaling Formats v1.0,
  https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf); 8-bit: FP8 E4M3 and
  E5M2 and MXFP8 (the same two sources).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Literal, TypeVar

from kbtool.model.cards import AppliesTo
from kbtool.model.errors import BadInput, InvalidField

Applies = Literal["scoped", "family", "general", "other"]
# the environment a read is for: FIELD=VALUE pairs (`--for hardware=H100`) or a mapping; None: kb.toml's
Environment = Mapping[str, str] | Iterable[str] | None
# from the strongest claim to the weakest: across fields, the weakest one holds
ORDER: tuple[Applies, ...] = ("general", "scoped", "family", "other")

FAMILIES: dict[str, dict[str, tuple[str, ...]]] = {
    "hardware": {
        "Hopper": ("H100", "H200", "H800", "H20", "GH200"),
        "Blackwell": ("B200", "B100", "B300", "GB200", "GB300"),
        "Ada Lovelace": ("L40S", "L40", "L4"),
        "Ampere": ("A100", "A800", "A30", "A40", "A10", "A16", "A2"),
    },
    "precision": {
        "FP4": ("nvfp4", "mxfp4", "fp4"),
        "FP8": ("fp8", "fp8_e4m3", "fp8_e5m2", "e4m3", "e5m2", "mxfp8"),
    },
}
_FAMILY_OF: dict[str, dict[str, str]] = {
    field: {value.casefold(): name for name, values in families.items() for value in values}
    for field, families in FAMILIES.items()
}


# a field given as one of these is not judged at all: `--for hardware=any` in a project whose
# kb.toml [environment] names a GPU asks about every GPU
ANY = ("any", "*")
GPU_MODEL = re.compile(r"\b((?:RTX|GTX) ?\d{4}|[A-Z]{1,2}\d{2,4}[A-Z]?)\b")  # H100, B200, L40S, MI300X, RTX 4090
T = TypeVar("T")


def gpu_model(name: str) -> str | None:
    """'NVIDIA H100 80GB HBM3 x8' -> 'H100' (the value applies_to.hardware names); None when no model
    number is in it."""
    found = GPU_MODEL.findall(name.upper().replace("NVIDIA", " "))
    return found[0].replace(" ", "") if found else None


def family(field: str, value: Any) -> str | None:
    """'Hopper' for hardware H200; None for a value (or a field) kb has no family for."""
    return _FAMILY_OF.get(field, {}).get(str(value).strip().casefold())


def _values(scope: Any) -> list[str]:
    if scope is None or scope == [] or scope == "":
        return []
    return [str(v) for v in (scope if isinstance(scope, list) else [scope])]


def applies_on(field: str, scope: Any, wanted: str) -> Applies:
    """How a card scoped to `scope` (a value, a list, or None) on one field applies to `wanted`."""
    values = _values(scope)
    if not values:
        return "general"
    if any(v.strip().casefold() == wanted.strip().casefold() for v in values):
        return "scoped"
    mine = family(field, wanted)
    if mine is not None and any(family(field, v) == mine for v in values):
        return "family"
    return "other"


def applies(applies_to: Mapping[str, Any] | None, environment: Mapping[str, str]) -> Applies:
    """How a card with this applies_to applies to the environment (field -> value): the weakest field."""
    scope = applies_to or {}
    found: Applies = "general"
    for field, wanted in environment.items():
        here = applies_on(field, scope.get(field), wanted)
        if ORDER.index(here) > ORDER.index(found):
            found = here
    return found


def unknown_values(environment: Mapping[str, str]) -> list[str]:
    """'hardware=MI300X' for each value of a field with families that kb has no family for: matched exactly."""
    return [f"{k}={v}" for k, v in environment.items() if k in FAMILIES and family(k, v) is None]


def parse_environment(pairs: Iterable[str], flag: str = "--for") -> dict[str, str]:
    """`--for hardware=H200` ... -> {"hardware": "H200"}; InvalidField naming a field applies_to lacks."""
    given: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise InvalidField(f"{flag} {pair!r}: expected FIELD=VALUE, e.g. hardware=H100")
        given[key.strip()] = value
    return checked_environment(given, flag)


def checked_environment(given: Mapping[str, Any], flag: str = "for") -> dict[str, str]:
    """An environment as a mapping ({"hardware": "H100"}, an MCP call's or a contract's) checked as it is,
    never turned back into FIELD=VALUE text: each key an applies_to field, each value a non-empty string
    (trimmed); InvalidField naming the first that is not."""
    known = set(AppliesTo.model_fields)
    out: dict[str, str] = {}
    for key, value in given.items():
        key = str(key).strip()
        plain = isinstance(value, (str, int, float)) and not isinstance(value, bool)  # a number reads as its text
        text = str(value).strip() if plain else ""
        if not key or not text:
            raise InvalidField(f"{flag} {f'{key}={value}'!r}: expected FIELD=VALUE, e.g. hardware=H100")
        if key not in known:
            raise InvalidField(f"{flag} {key}: not an applies_to field (one of {', '.join(sorted(known))})")
        out[key] = text
    return out


def environment_of(settings: Mapping[str, Any], given: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a read judges by: the applies_to fields of kb.toml [environment] (its `gpu`, as
    the machine reports it, read as hardware when it names none), the caller's own fields over them;
    a field given as `any` is left out."""
    known = set(AppliesTo.model_fields)
    out = {k: str(v).strip() for k, v in settings.items() if k in known and str(v).strip()}
    if "hardware" not in out and (gpu := gpu_model(str(settings.get("gpu") or ""))):
        out["hardware"] = gpu
    out.update(given or {})
    return {k: v for k, v in out.items() if v.casefold() not in ANY}


def ranked(
    items: Iterable[T],
    scope_of: Callable[[T], Mapping[str, Any] | None],
    environment: Mapping[str, str],
    only_applying: bool = False,
) -> list[tuple[T, Applies]]:
    """Each item with how it applies, those scoped elsewhere after every one that applies (each group
    in the order given), or left out with only_applying."""
    judged: dict[str, Applies] = {}  # cards share scopes: each distinct one judged once

    def how(item: T) -> Applies:
        scope = scope_of(item)
        key = repr(scope)
        if key not in judged:
            judged[key] = applies(scope, environment)
        return judged[key]

    marked = [(item, how(item)) for item in items]
    if only_applying:
        return [(item, how) for item, how in marked if how != "other"]
    return sorted(marked, key=lambda pair: pair[1] == "other")  # stable: the given order within each


def nothing_to_judge() -> BadInput:
    """The refusal of --only-applying (only_applying) when no environment is given nor configured."""
    return BadInput(
        "--only-applying: no environment to judge by; give --for FIELD=VALUE (hardware=H100) or set it in "
        "kb.toml [environment]"
    )
