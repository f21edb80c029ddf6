"""Cards on disk: YAML frontmatter between '---' lines, then a markdown body.

`render` writes the canonical form; `parse(render(card, body))` gives the same card and body
back, so `render(parse(x)) == x` for every canonical file. Sections (for chunking and
import) come from markdown-it-py's token stream, so headings inside code blocks are not
mistaken for sections. The frontmatter reader is shared with SKILL.md files (skills.py),
which word its failures their own way.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

import yaml
from markdown_it import MarkdownIt

from kbtool.model import evidence_layout
from kbtool.model.cards import CardBase
from kbtool.model.errors import InvalidCard
from kbtool.model.parsing import why_unparsable
from kbtool.model.validation import validate_card

FENCE = "---"


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data: Any) -> bool:
        return True  # every value written out: a card's frontmatter never holds &anchors or *aliases


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    # multi-line values (a command, a fix) read better as literal blocks than as "...\n..." escapes
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _str_representer)


class Flow(dict[str, Any]):
    """A mapping written on one line: an evidence entry, its conditions, an artifact."""


def _flow_representer(dumper: yaml.SafeDumper, value: Flow) -> yaml.MappingNode:
    return dumper.represent_mapping("tag:yaml.org,2002:map", value, flow_style=True)


_Dumper.add_representer(Flow, _flow_representer)


def dump_yaml(data: dict[str, Any]) -> str:
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=10_000, default_flow_style=False)


_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _Loader(_PARSER):  # type: ignore[misc,valid-type]  # whichever of the two PyYAML has
    """The safe loader, refusing what it would otherwise take silently or crash on, each as a YAML error
    with its line: a key given twice (PyYAML keeps the last, so a card would say what its file does not
    show first), a date that does not exist (2024-02-30, year 0) and an integer too long to convert."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        given = sum(1 for key, _ in node.value if key.tag != "tag:yaml.org,2002:merge")  # before merges resolve
        mapping: dict[Any, Any] = super().construct_mapping(node, deep=deep)
        if len(mapping) < given and not any(key.tag == "tag:yaml.org,2002:merge" for key, _ in node.value):
            seen: set[Any] = set()
            for key_node, _ in node.value:  # a key given twice: which one, and where
                key = self.construct_object(key_node)
                if key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"the key {key!r} is given twice; say it once", key_node.start_mark
                    )
                seen.add(key)
        return mapping

    def construct_yaml_timestamp(self, node: yaml.ScalarNode) -> Any:
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a date ({exc})", node.start_mark
            ) from None

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        try:
            number: int = super().construct_yaml_int(node)
            return number
        except ValueError as exc:
            raise yaml.constructor.ConstructorError(None, None, why_unparsable(exc), node.start_mark) from None


_Loader.add_constructor("tag:yaml.org,2002:timestamp", _Loader.construct_yaml_timestamp)
_Loader.add_constructor("tag:yaml.org,2002:int", _Loader.construct_yaml_int)

# libyaml's parser when PyYAML was built with it (the wheels are): the same safe constructors,
# ~13x faster on card headers (0.20 vs 2.7 ms a card, measured on the starter KB). Skills are
# read with it too, so a header parses the same in a card and in a SKILL.md.
YAML_LOADER = _Loader

FrontmatterProblem = Literal["no-opening", "not-closed", "not-yaml", "not-a-mapping", "aliases"]


class FrontmatterError(ValueError):
    """Text whose frontmatter cannot be read. `reason` says which way, for each caller to word
    in its own terms (a card and a skill say it differently); `where` and `problem` are the
    YAML parser's account when the header is not YAML."""

    def __init__(
        self, reason: FrontmatterProblem, yaml_error: yaml.YAMLError | None = None, problem: str | None = None
    ):
        super().__init__(reason)
        self.reason, self.yaml_error, self._problem = reason, yaml_error, problem

    @property
    def where(self) -> str:
        # the parser counts lines of the header from 0; the header starts on the file's second line
        mark = getattr(self.yaml_error, "problem_mark", None)
        return f" at line {mark.line + 2}" if mark is not None else ""

    @property
    def problem(self) -> str | None:
        return self._problem or getattr(self.yaml_error, "problem", None)


def read_frontmatter(text: str, allow_empty: bool = True) -> tuple[dict[str, Any], str]:
    """The frontmatter mapping and the body after its closing '---', or FrontmatterError.
    An empty header reads as {} when allow_empty, else as not a mapping."""
    lines = text.splitlines(keepends=True)
    if not lines or lines[0].rstrip("\r\n") != FENCE:
        raise FrontmatterError("no-opening")
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == FENCE), None)
    if end is None:
        raise FrontmatterError("not-closed")
    header, body = "".join(lines[1:end]), "".join(lines[end + 1 :])
    try:
        data = yaml.load(header, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise FrontmatterError("not-yaml", exc) from None
    except (ValueError, RecursionError) as exc:  # what a constructor above does not word itself
        raise FrontmatterError("not-yaml", problem=why_unparsable(exc)) from None
    if data is None and allow_empty:
        data = {}
    if not isinstance(data, dict):
        raise FrontmatterError("not-a-mapping")
    if _shares_nodes(data):
        raise FrontmatterError("aliases")
    return data, body


def _shares_nodes(data: Any) -> bool:
    """Whether one list or mapping appears twice: what YAML anchors and aliases (&a, *a) make. kb never
    writes them, and nested ones ("billion laughs") load small but cost minutes and gigabytes to walk."""
    seen: set[int] = set()
    stack = [data]
    while stack:
        node = stack.pop()
        if isinstance(node, (dict, list)):
            if id(node) in seen:
                return True
            seen.add(id(node))
            stack.extend(node.values() if isinstance(node, dict) else node)
    return False


_CARD_PROBLEMS: dict[FrontmatterProblem, str] = {
    "no-opening": "a card starts with a '---' line, then YAML frontmatter, then '---'",
    "not-closed": "the frontmatter is not closed by a '---' line",
    "not-yaml": "malformed YAML frontmatter{where}: {problem}",
    "not-a-mapping": "frontmatter is not a mapping of fields",
    "aliases": "the frontmatter uses YAML anchors and aliases (&name, *name); write each value out",
}


def load_frontmatter(text: str, origin: str) -> tuple[dict[str, Any], str]:
    """A card's raw frontmatter mapping and its body, before schema validation; InvalidCard if unreadable."""
    if text.startswith("\ufeff"):  # else it reads as a card with no opening '---', which misleads
        raise InvalidCard(f"{origin}: starts with a byte-order mark (U+FEFF); save it as UTF-8 without one")
    try:
        return read_frontmatter(text)
    except FrontmatterError as exc:
        message = _CARD_PROBLEMS[exc.reason].format(where=exc.where, problem=exc.problem or "not valid YAML")
        raise InvalidCard(f"{origin}: {message}") from None


def normalize_body(body: str) -> str:
    body = re.sub(r"\A(?:[ \t]*\r?\n)+", "", body.replace("\r\n", "\n"))
    body = body.rstrip()
    return body + "\n" if body else ""


def parse(text: str, origin: str = "<card>") -> tuple[CardBase, str]:
    data, body = load_frontmatter(text, origin)
    card = validate_card(data, origin)
    if body.startswith("\n"):
        body = body[1:]
    return card, body


def _prune(value: Any) -> Any:
    """Drop None and empty collections so a card file shows only what was said."""
    if isinstance(value, dict):
        pruned = {k: _prune(v) for k, v in value.items() if v is not None}
        return {k: v for k, v in pruned.items() if v not in ({}, [])}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


_HEAD = ("id", "kind", "title", "status")
_TAIL = ("tags", "applies_to", "source", "provenance", "links", "schema_version")


def card_data(card: CardBase) -> dict[str, Any]:
    """Frontmatter in canonical order: identity, the kind's own fields, then the common ones. A finding's
    evidence is laid out to be read (kbtool.model.evidence_layout): what entries share once, an entry a line."""
    data = _prune(card.model_dump(mode="python"))
    if data.get("evidence"):
        under, entries = evidence_layout.compact(data["evidence"])
        data["measured_under"] = [_flowing(group) for group in under] or None
        data["evidence"] = [Flow(entry) for entry in entries]
        data = {k: v for k, v in data.items() if v is not None}
    own = [k for k in data if k not in _HEAD and k not in _TAIL]
    if "measured_under" in own:  # just before the entries that refer to it
        own.remove("measured_under")
        own.insert(own.index("evidence"), "measured_under")
    return {k: data[k] for k in (*_HEAD, *own, *_TAIL) if k in data}


def _flowing(group: dict[str, Any]) -> dict[str, Any]:
    """A measured_under item: its conditions and each artifact on a line of their own."""
    out: dict[str, Any] = {}
    for key, value in group.items():
        if key in ("conditions", "artifact", "environment", "repo") and isinstance(value, dict):
            out[key] = Flow(value)
        elif key in ("artifacts", "baseline_artifacts") and isinstance(value, list):
            out[key] = [Flow(a) for a in value]
        else:
            out[key] = value
    return out


def render(card: CardBase, body: str = "") -> str:
    body = normalize_body(body)
    text = f"{FENCE}\n{dump_yaml(card_data(card))}{FENCE}\n"
    return text + ("\n" + body if body else "")


@dataclass(frozen=True)
class Section:
    heading: str | None  # None for text before the first heading
    level: int
    trail: tuple[str, ...]  # the headings above this one, outermost first, then this one
    text: str  # the section's own text, without its heading line
    start_line: int


_TEXT_TOKENS = {"text", "text_special", "code_inline"}


def plain_text(inline: Any) -> str:
    """A heading as readers see it: '**2\\.1 Core**' -> '2.1 Core'."""
    children = inline.children or []
    text = "".join(
        c.content if c.type in _TEXT_TOKENS else " " if c.type in ("softbreak", "hardbreak") else "" for c in children
    )
    return " ".join(text.split())


# The body's blocks alone: inline markup is parsed only in headings (below), which is half the parse of a
# whole document (400 corpus files: 3.3 s -> 1.5 s, the same sections). One parser each, made once.
_BLOCKS = MarkdownIt("commonmark").disable("inline")
_INLINE = MarkdownIt("commonmark")


def sections(body: str, drop_comments: bool = False) -> list[Section]:
    """The body by heading. drop_comments leaves out HTML comment blocks (what a reader never sees, such
    as the generator code of a cog block), for the text search indexes."""
    lines = body.splitlines(keepends=True)
    env: dict[str, Any] = {}  # the body's link reference definitions, which a heading's links may use
    tokens = _BLOCKS.parse(body, env)
    heads: list[tuple[int, int, int, str]] = []  # (start, end, level, title)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            title = plain_text(_INLINE.parseInline(tokens[i + 1].content, env)[0])
            heads.append((tok.map[0], tok.map[1], int(tok.tag[1]), title))
        if drop_comments and tok.type == "html_block" and tok.map and tok.content.lstrip().startswith("<!--"):
            for n in range(*tok.map):
                lines[n] = "\n"
    out: list[Section] = []
    first = heads[0][0] if heads else len(lines)
    preamble = "".join(lines[:first]).strip()
    if preamble:
        out.append(Section(None, 0, (), preamble, 0))
    stack: list[tuple[int, str]] = []
    for n, (start, end, level, title) in enumerate(heads):
        stop = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, title))
        out.append(Section(title, level, tuple(t for _, t in stack), "".join(lines[end:stop]).strip(), start))
    return out
