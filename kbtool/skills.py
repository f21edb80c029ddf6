"""Agent Skills (agentskills.io/specification): a folder holding SKILL.md, YAML frontmatter
then markdown instructions, and optionally scripts/, references/ and assets/.

The frontmatter is the specification's six keys and no others:

    name           required; 1-64 characters of a-z, 0-9 and '-', no leading, trailing or
                   double hyphen; equal to the folder's name
    description    required; 1-1024 characters: what the skill does and when to use it
    license        optional string
    compatibility  optional; 1-500 characters of environment requirements
    metadata       optional map of string keys to string values (kb's own fields go here)
    allowed-tools  optional space-separated string (experimental in the specification)

`check_skill` judges a folder exactly by these rules and names every violation; a skill
with violations is never loaded as a `Skill`, so nothing downstream sees a broken one.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .errors import BadInput

SKILL_FILE = "SKILL.md"
KEYS = ("name", "description", "license", "compatibility", "metadata", "allowed-tools")
NAME_MAX, DESCRIPTION_MAX, COMPATIBILITY_MAX = 64, 1024, 500
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
FOLDERS = ("scripts", "references", "assets")
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


def name_violations(name: Any) -> list[str]:
    if not isinstance(name, str):
        return [f"name must be a string, not {_yaml_type(name)}"]
    problems = []
    if not 1 <= len(name) <= NAME_MAX:
        problems.append(f"name must be 1-{NAME_MAX} characters (it has {len(name)})")
    if name and not NAME_PATTERN.fullmatch(name):
        problems.append(
            f"name {name!r} may hold only lowercase a-z, digits and single hyphens, not starting or ending with one"
        )
    return problems


def frontmatter_violations(data: dict[str, Any], folder_name: str | None) -> list[str]:
    problems = [
        f"unknown frontmatter key {key!r} (the specification allows {', '.join(KEYS)}; put other fields under metadata)"
        for key in data
        if key not in KEYS
    ]
    if "name" not in data:
        problems.append("name is required")
    else:
        problems += name_violations(data["name"])
        if folder_name is not None and isinstance(data["name"], str) and data["name"] != folder_name:
            problems.append(f"name {data['name']!r} must equal the folder's name {folder_name!r}")
    description = data.get("description")
    if "description" not in data:
        problems.append("description is required")
    elif not isinstance(description, str):
        problems.append(f"description must be a string, not {_yaml_type(description)}")
    elif not description.strip():
        problems.append("description must not be empty")
    elif len(description) > DESCRIPTION_MAX:
        problems.append(f"description must be at most {DESCRIPTION_MAX} characters (it has {len(description)})")
    if "license" in data and not isinstance(data["license"], str):
        problems.append(f"license must be a string, not {_yaml_type(data['license'])}")
    if "compatibility" in data:
        compat = data["compatibility"]
        if not isinstance(compat, str):
            problems.append(f"compatibility must be a string, not {_yaml_type(compat)}")
        elif not 1 <= len(compat) <= COMPATIBILITY_MAX:
            problems.append(f"compatibility must be 1-{COMPATIBILITY_MAX} characters (it has {len(compat)})")
    if "metadata" in data:
        meta = data["metadata"]
        if not isinstance(meta, dict):
            problems.append(f"metadata must be a map of strings to strings, not {_yaml_type(meta)}")
        else:
            problems += [
                f"metadata.{k}: keys and values must be strings (got {_yaml_type(k)} -> {_yaml_type(v)})"
                for k, v in meta.items()
                if not isinstance(k, str) or not isinstance(v, str)
            ]
    if "allowed-tools" in data and not isinstance(data["allowed-tools"], str):
        problems.append(f"allowed-tools must be a space-separated string, not {_yaml_type(data['allowed-tools'])}")
    return problems


def parse_skill_text(text: str) -> tuple[dict[str, Any] | None, str, list[str]]:
    """(frontmatter, body, violations) of a SKILL.md's text; frontmatter is None when unreadable."""
    text = text.removeprefix("\ufeff")
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != "---":
        return None, text, ["SKILL.md must start with '---', then YAML frontmatter, then '---'"]
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if end is None:
        return None, text, ["the frontmatter is not closed by a '---' line"]
    header, body = "".join(lines[1:end]), "".join(lines[end + 1 :])
    try:
        data = yaml.safe_load(header)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 2}" if mark is not None else ""
        return None, body, [f"the frontmatter is not valid YAML{where}: {getattr(exc, 'problem', None) or exc}"]
    if not isinstance(data, dict):
        return None, body, ["the frontmatter must be a mapping of keys to values"]
    return data, body, []


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
    if not path.is_file():
        raise InvalidSkill(where, [f"no {SKILL_FILE} in the folder"])
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise InvalidSkill(where, [f"{SKILL_FILE} is not UTF-8 text"]) from None
    data, body, problems = parse_skill_text(text)
    if data is None:
        raise InvalidSkill(where, problems)
    problems = frontmatter_violations(data, folder.resolve().name)
    if problems:
        raise InvalidSkill(where, problems)
    files = tuple(
        sorted(
            rel
            for rel in (p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
            if rel != SKILL_FILE
        )
    )
    return Skill(
        name=data["name"],
        description=data["description"],
        body=body.lstrip("\n"),
        path=where,
        license=data.get("license"),
        compatibility=data.get("compatibility"),
        metadata=dict(data.get("metadata") or {}),
        allowed_tools=data.get("allowed-tools"),
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


def skill_folders(root: Path) -> list[Path]:
    """The folders directly under root that hold a SKILL.md (valid or not), by name."""
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and (p / SKILL_FILE).exists())


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
