"""The Agent Skills specification: a skill folder read and checked.

Agent Skills (agentskills.io/specification): a folder holding SKILL.md, YAML frontmatter
then markdown instructions, and optionally scripts/, references/ and assets/.

The frontmatter is the specification's six keys and no others:

    name           required; 1-64 characters of a-z, 0-9 and '-', no leading, trailing or
                   double hyphen; equal to the folder's name
    description    required; 1-1024 characters: what the skill does and when to use it
    license        optional string
    compatibility  optional; 1-500 characters of environment requirements
    metadata       optional map of string keys to string values (kb's own fields go here)
    allowed-tools  optional space-separated string (experimental in the specification)

`SkillFrontmatter` is these rules as a strict pydantic model (a YAML number is not a string),
all but the folder's name, which is checked beside it; its errors are worded as the rule each
breaks. `check_skill` judges a folder exactly by them and names every violation at once; a
skill with violations is never loaded as a `Skill`, so nothing downstream sees a broken one.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, field_validator
from pydantic_core import ErrorDetails, InitErrorDetails, PydanticCustomError, PydanticKnownError

from kbtool.model import markdown
from kbtool.model.errors import BadInput
from kbtool.store.files import LinkOut, leads_out, link_out, links_in

SKILL_FILE = "SKILL.md"
NAME_MAX, DESCRIPTION_MAX, COMPATIBILITY_MAX = 64, 1024, 500
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
LISTING_CHARS = 250  # what agent skill listings show of a description before they cut it
# a description that says when to use the skill names a trigger: "use when", "use for", "whenever", "if the user" ...
SAYS_WHEN = re.compile(
    r"\b(when|whenever|trigger(s|ed)?|before|after|if (the |a )?(user|you|asked))\b|"
    r"\buse (it |this |this skill |them )?(for|to|on|in|if|during)\b",
    re.IGNORECASE,
)


class InvalidSkill(BadInput):
    """A skill folder that breaks the specification; `violations` names each rule broken."""

    def __init__(self, where: str, violations: list[str]):
        self.where, self.violations = where, violations
        super().__init__(f"{where}: " + "; ".join(violations))


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    path: str  # the folder, as the caller named it (relative to the KB root for KB skills)
    license: str | None = None
    compatibility: str | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    allowed_tools: str | None = None
    files: tuple[str, ...] = ()  # everything else in the folder, relative to it, posix

    def frontmatter(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "description": self.description}
        for key, value in (
            ("license", self.license),
            ("compatibility", self.compatibility),
            ("metadata", self.metadata or None),
            ("allowed-tools", self.allowed_tools),
        ):
            if value is not None:
                data[key] = value
        return data

    def to_dict(self, body: bool = True) -> dict[str, Any]:
        # id and kind as a search hit names them, so a skill reads like a card wherever both appear
        data = {"id": self.name, "kind": "skill", **self.frontmatter(), "path": self.path, "files": list(self.files)}
        if body:
            data["body"] = self.body
        return data


def _name_rules(name: str) -> str:
    # length and characters are separate rules and a name can break both; one ValidationError
    # holding an error for each names both (a validator's plain ValueError stops at the first)
    errors = []
    if not 1 <= len(name) <= NAME_MAX:
        kind, ctx = ("string_too_long", {"max_length": NAME_MAX}) if name else ("string_too_short", {"min_length": 1})
        errors.append(InitErrorDetails(type=kind, loc=(), input=name, ctx=ctx))
    if name and not NAME_PATTERN.fullmatch(name):
        errors.append(
            InitErrorDetails(type="string_pattern_mismatch", loc=(), input=name, ctx={"pattern": NAME_PATTERN.pattern})
        )
    if errors:
        raise ValidationError.from_exception_data("name", errors)
    return name


def _not_blank(text: str) -> str:
    if not text.strip():
        raise PydanticCustomError("blank", "must not be empty")
    return text


Name = Annotated[str, AfterValidator(_name_rules)]


class SkillFrontmatter(BaseModel):
    """A SKILL.md's frontmatter by the rules in the module docstring. Strict: a YAML number or
    list is an error, never coerced to the string the specification asks for."""

    model_config = ConfigDict(extra="forbid", strict=True)

    name: Name
    # blank is judged before length: a description of only spaces is empty, however long
    description: Annotated[str, AfterValidator(_not_blank), Field(max_length=DESCRIPTION_MAX)]
    license: str | None = None
    compatibility: Annotated[str, Field(min_length=1, max_length=COMPATIBILITY_MAX)] | None = None
    metadata: dict[str, str] = {}
    allowed_tools: str | None = Field(default=None, alias="allowed-tools")

    @field_validator("license", "compatibility", "allowed_tools", mode="before")
    @classmethod
    def _null_is_not_a_string(cls, value: Any) -> Any:
        # optional means the key may be left out; a key written with no value is still a mistake
        if value is None:
            raise PydanticKnownError("string_type")
        return value


KEYS = tuple(field.alias or name for name, field in SkillFrontmatter.model_fields.items())
_NAME = TypeAdapter(Name)  # a name on its own, as a command line gives it
_UNKNOWN = ("extra_forbidden", "invalid_key")  # invalid_key: a key that is not even a string
_MAX_CHARS = {"name": NAME_MAX, "description": DESCRIPTION_MAX, "compatibility": COMPATIBILITY_MAX}


def _violation(err: ErrorDetails, data: dict[Any, Any]) -> str:
    """One pydantic error worded as the rule of the specification it breaks."""
    loc, kind, value = err["loc"], err["type"], err["input"]
    key = loc[0] if loc else ""
    if kind in _UNKNOWN:
        allowed = ", ".join(KEYS)
        return f"unknown frontmatter key {key!r} (the specification allows {allowed}; put other fields under metadata)"
    if kind == "missing":
        return f"{key} is required"
    if key == "metadata" and len(loc) > 1:  # one entry, whether its key or its value is wrong
        entry = value if loc[-1] == "[key]" else loc[1]  # the key itself: a loc holds True as 1
        types = f"{_yaml_type(entry)} -> {_yaml_type(data['metadata'][entry])}"
        return f"metadata.{entry}: keys and values must be strings (got {types})"
    if kind == "dict_type":
        return f"{key} must be a map of strings to strings, not {_yaml_type(value)}"
    if kind == "string_type":
        shape = "a space-separated string" if key == "allowed-tools" else "a string"
        return f"{key} must be {shape}, not {_yaml_type(value)}"
    if kind == "blank":
        return f"{key} {err['msg']}"
    # too_long: what a length constraint placed after a validator reports (the description's)
    if kind in ("string_too_short", "string_too_long", "too_long"):
        most = _MAX_CHARS[str(key)]
        bounds = f"at most {most}" if key == "description" else f"1-{most}"
        return f"{key} must be {bounds} characters (it has {len(value)})"
    if kind == "string_pattern_mismatch":
        return (
            f"{key} {value!r} may hold only lowercase a-z, digits and single hyphens, not starting or ending with one"
        )
    return f"{key}: {err['msg']}"


def name_violations(name: Any) -> list[str]:
    """Every rule of the specification name breaks; empty when it is a valid skill name."""
    try:
        _NAME.validate_python(name, strict=True)
    except ValidationError as exc:  # errors of a bare value are at loc (), a frontmatter's under "name"
        return [_violation({**err, "loc": ("name", *err["loc"])}, {}) for err in exc.errors()]
    return []


def _judge(data: dict[str, Any], folder_name: str | None) -> tuple[SkillFrontmatter | None, list[str]]:
    """The frontmatter, or None and every rule it breaks; folder_name, when given, is the name it must have."""
    try:
        frontmatter: SkillFrontmatter | None = SkillFrontmatter.model_validate(data)
        errors: list[ErrorDetails] = []
    except ValidationError as exc:
        # pydantic reports key by key in the model's order, then unknown keys; kb lists those first
        frontmatter, errors = None, sorted(exc.errors(), key=lambda err: err["type"] not in _UNKNOWN)
    lines = [_violation(err, data) for err in errors]
    name = data.get("name")
    if folder_name is not None and isinstance(name, str) and name != folder_name:
        after_name = sum(1 for err in errors if err["type"] in _UNKNOWN or err["loc"][0] == "name")
        lines.insert(after_name, f"name {name!r} must equal the folder's name {folder_name!r}")
    problems = list(dict.fromkeys(lines))  # a metadata entry can break both its key and its value
    return (None if problems else frontmatter), problems


def frontmatter_violations(data: dict[str, Any], folder_name: str | None) -> list[str]:
    """Every rule of the specification the frontmatter breaks; empty when it holds."""
    return _judge(data, folder_name)[1]


# how a SKILL.md whose frontmatter cannot be read at all is told
_UNREADABLE: dict[markdown.FrontmatterProblem, str] = {
    "no-opening": f"{SKILL_FILE} must start with '---', then YAML frontmatter, then '---'",
    "not-closed": "the frontmatter is not closed by a '---' line",
    "not-yaml": "the frontmatter is not valid YAML{where}: {problem}",
    "not-a-mapping": "the frontmatter must be a mapping of keys to values",
    "aliases": "the frontmatter uses YAML anchors and aliases (&name, *name); write each value out",
}


def check_skill(folder: Path) -> list[str]:
    """Every way the skill folder breaks the specification; empty when it is valid."""
    try:
        load_skill(folder)
    except InvalidSkill as exc:
        return exc.violations
    return []


def load_skill(folder: Path, shown_as: str | None = None) -> Skill:
    """The skill in folder, or InvalidSkill naming every violation."""
    where = shown_as or str(folder)
    if not folder.is_dir():
        raise InvalidSkill(where, ["not a folder"])
    path = folder / SKILL_FILE
    links = links_in(folder)
    if links:
        raise InvalidSkill(
            where,
            [
                f"{rel} is a symbolic link (to {target}); a skill is plain files, and kb copies no links"
                for rel, target in links
            ],
        )
    if not path.is_file():
        raise InvalidSkill(where, [f"no {SKILL_FILE} in the folder"])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidSkill(where, [f"{SKILL_FILE} is not UTF-8 text"]) from None
    try:
        # skills come from anywhere, and some editors start UTF-8 with a byte-order mark; an
        # empty header is no mapping here (cards, which kb writes, read it as {})
        data, body = markdown.read_frontmatter(text.removeprefix("\ufeff"), allow_empty=False)
    except markdown.FrontmatterError as exc:
        message = _UNREADABLE[exc.reason].format(where=exc.where, problem=exc.problem or exc.yaml_error)
        raise InvalidSkill(where, [message]) from None
    frontmatter, problems = _judge(data, folder.resolve().name)
    if frontmatter is None:
        raise InvalidSkill(where, problems)
    files = tuple(
        sorted(
            rel
            for rel in (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            if rel != SKILL_FILE
        )
    )
    return Skill(
        name=frontmatter.name,
        description=frontmatter.description,
        body=body.lstrip("\n"),
        path=where,
        license=frontmatter.license,
        compatibility=frontmatter.compatibility,
        metadata=dict(frontmatter.metadata),
        allowed_tools=frontmatter.allowed_tools,
        files=files,
    )


def discoverability(skill: Skill) -> list[tuple[str, str]]:
    """(code, message) warnings about how well an agent will pick this skill from a listing."""
    out = []
    if len(skill.description) > LISTING_CHARS:
        out.append(
            (
                "skill-description-long",
                f"the description has {len(skill.description)} characters; agent listings "
                f"show about {LISTING_CHARS}, so put what it does and when to use it first",
            )
        )
    if not SAYS_WHEN.search(skill.description):
        out.append(
            (
                "skill-description-when",
                "the description never says when to use the skill (e.g. 'Use when ...'); agents choose skills by it",
            )
        )
    return out


def render_skill(skill: Skill) -> str:
    header = yaml.safe_dump(skill.frontmatter(), sort_keys=False, allow_unicode=True, width=10_000)
    return f"---\n{header}---\n\n{skill.body.lstrip(chr(10))}"


def skill_folders(
    root: Path, within: Path | None = None, skipped: Callable[[LinkOut], None] | None = None
) -> list[Path]:
    """The folders directly under root that hold a SKILL.md (valid or not), by name. With within (the
    resolved root of the knowledge base or source that root is in), root or a folder in it that is a
    symbolic link out of within is left out, unread, and handed to skipped: a clone's `skills/s -> ~/.ssh`
    is no skill of it (kbtool/store/files.py)."""
    linked = link_out(within, root) if within is not None else None
    if linked is not None:
        if skipped is not None:
            skipped(linked)
        return []
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.iterdir()):
        if within is not None and path.is_symlink() and leads_out(within, path):
            if skipped is not None:
                skipped(LinkOut(path, os.readlink(path)))
        elif path.is_dir() and (path / SKILL_FILE).exists():
            found.append(path)
    return found


def _yaml_type(value: Any) -> str:
    return {
        dict: "a map",
        list: "a list",
        type(None): "empty",
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
    }.get(type(value), type(value).__name__)
