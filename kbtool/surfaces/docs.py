"""The reference parts of docs/ and skills/kb/SKILL.md, made from the models and the CLI itself.

Made from the vocabulary, the card models and the CLI, so documentation cannot drift from the code. The docs
files hold cog blocks that call these (the Makefile's GENERATED lists them, with docs/development.md, whose
layout of the code kbtool/layout.py makes); the kb skill's table is refreshed in place:

    cog -r $(GENERATED)       # make docs
    cog --check $(GENERATED)  # make lint (CI)
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal, get_args, get_origin

from pydantic import BaseModel

from kbtool.model.cards import MODELS, AppliesTo, CardBase, Links, Provenance
from kbtool.model.vocabulary import KINDS, LINT_CHECKS, LINT_CLASSES, STATUSES


def purpose(model: type[BaseModel]) -> str:
    """A kind's model docstring, first sentence, as a table cell: 'what a component must satisfy: ...'."""
    first = (model.__doc__ or "").strip().split(". ")[0].rstrip(".")
    return first[:1].lower() + first[1:]


def _unwrap(annotation: Any) -> Any:
    """The type under Annotated[...] and `| None`."""
    while get_origin(annotation) is typing.Annotated:
        annotation = get_args(annotation)[0]
    if get_origin(annotation) in (typing.Union, types.UnionType):
        rest = [a for a in get_args(annotation) if a is not type(None)]
        if len(rest) == 1:
            return _unwrap(rest[0])
    return annotation


def describe_field(name: str, annotation: Any, required: bool = False) -> str:
    """One field as the tables show it: `severity (must/should)`, `check: {command, ...}`, `evidence[] (...)`."""
    kind = _unwrap(annotation)
    mark = " (required)" if required else ""
    if get_origin(kind) is Literal:
        return f"{name} ({'/'.join(str(v) for v in get_args(kind))}){mark}"
    if get_origin(kind) is list and isinstance(_unwrap(get_args(kind)[0]), type):
        item = _unwrap(get_args(kind)[0])
        if issubclass(item, BaseModel):
            return f"{name}[] ({', '.join(_fields(item))}){mark}"
    if isinstance(kind, type) and issubclass(kind, BaseModel):
        return f"{name}: {{{', '.join(_fields(kind))}}}{mark}"
    return f"{name}{mark}"


def _fields(model: type[BaseModel]) -> list[str]:
    return [describe_field(n, f.annotation) for n, f in model.model_fields.items()]


def own_fields(kind: str) -> str:
    """The fields a kind adds to every card's (kind and a status default are not its own)."""
    model = MODELS[kind]
    common = set(CardBase.model_fields)
    return ", ".join(
        describe_field(n, f.annotation, f.is_required())
        for n, f in model.model_fields.items()
        if n not in common or n == "source" and f.is_required()
    )


def kinds_table() -> str:
    """docs/concepts.md: kind | holds | its own fields."""
    rows = ["| kind | holds | its own fields |", "|---|---|---|"]
    rows += [f"| {k} | {purpose(MODELS[k])} | {own_fields(k)} |" for k in KINDS]
    return "\n".join(rows)


def agent_kinds_table() -> str:
    """The kb skill: kind | what it holds | how you use it."""
    silent = [k for k in KINDS if not MODELS[k].agent_use]
    if silent:
        raise ValueError(f"kbtool/model/cards.py: the {silent[0]} model does not say its agent_use")
    rows = ["| kind | what it holds | how you use it |", "|---|---|---|"]
    rows += [f"| {k} | {purpose(MODELS[k])} | {MODELS[k].agent_use} |" for k in KINDS]
    return "\n".join(rows)


KB_SKILL_TABLE = "| kind | what it holds | how you use it |"


def refresh_kb_skill(path: str, check: bool = False) -> bool:
    """Make the kinds table in the kb skill (from its header row to the next blank line) anew; with
    check, write nothing. True when the file was already current. Not cog, as docs/ is: the kb
    skill is what agents load, and generator code in an HTML comment is text hidden from its reader
    (`kb skill scan` flags it)."""
    from pathlib import Path

    file = Path(path)
    text = file.read_text(encoding="utf-8")
    lines = text.split("\n")
    if KB_SKILL_TABLE not in lines:
        raise ValueError(f"{path}: no kinds table (a line {KB_SKILL_TABLE!r}) to refresh")
    start = lines.index(KB_SKILL_TABLE)
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    current = "\n".join([*lines[:start], *agent_kinds_table().split("\n"), *lines[end:]])
    if current != text and not check:
        file.write_text(current, encoding="utf-8")
    return current == text


COMMON = ("id", "kind", "title", "status", "tags", "applies_to", "provenance", "links", "source", "schema_version")


def common_fields() -> str:
    """docs/concepts.md's sentence on the fields every card has, made from CardBase and its parts."""
    if tuple(CardBase.model_fields) != COMMON:
        raise ValueError(f"kbtool/surfaces/docs.py: COMMON is {COMMON}, CardBase has {tuple(CardBase.model_fields)}")

    def names(model: type[BaseModel]) -> str:
        return ", ".join(model.model_fields)

    return (
        f"Every card also has `id`, `kind`, `title`, `status` ({', '.join(STATUSES)}), `tags`, "
        f"`applies_to` ({names(AppliesTo)} — each a value or a list), `provenance` ({names(Provenance)}), "
        f"`links` ({names(Links)}) and `schema_version`; an imported card has a `source`."
    )


def lint_classes() -> str:
    """`schema` (invalid cards, ...), `links` (broken), ...: what --skip takes."""
    return ", ".join(f"`{name}` ({LINT_CHECKS[name]})" for name in LINT_CLASSES)


def lint_paragraph() -> str:
    return f"`kb lint`'s classes of checks, each of which `--skip` leaves out: {lint_classes()}."


# The width the CLI reference is rendered at, whatever the terminal: a default terminal's, so the
# reference reads as `kb COMMAND --help` prints there, and is the same on every machine.
HELP_WIDTH = 80


def cli_reference() -> str:
    """docs/cli.md: an index of every command and subcommand with its first sentence, then a section
    each with its `--help` (usage, help text, arguments, options) at HELP_WIDTH columns, in the order
    `kb --help` lists them."""
    import typer.main

    # read at call time, and absolute: this module sits below the CLI, which it documents once built
    from kbtool.surfaces.cli import app

    root = typer.main.get_command(app)
    top = root.context_class(root, info_name="kb", terminal_width=HELP_WIDTH, max_content_width=HELP_WIDTH)
    contexts = list(_command_contexts(top))
    index = [f"- [{c.command_path}](#{c.command_path.replace(' ', '-')}): {_gist(c)}" for c in contexts]
    sections = [f"### {c.command_path}\n\n```text\n{_plain_help(c)}\n```" for c in contexts]
    return "\n\n".join(["\n".join(index), *sections])


def _command_contexts(ctx: Any) -> Iterator[Any]:
    """The context of a command, then of each of its subcommands, depth first (click's, as typer vendors it)."""
    yield ctx
    group = ctx.command
    for name in group.list_commands(ctx) if hasattr(group, "list_commands") else []:
        command = group.get_command(ctx, name)
        if command is not None and not command.hidden:
            yield from _command_contexts(command.context_class(command, info_name=name, parent=ctx))


def _gist(ctx: Any) -> str:
    """A command's first sentence as markdown text: what is outside `code` escaped, so `<name>` shows."""
    text = str(ctx.command.get_short_help_str(limit=1000))
    parts = text.split("`") if text.count("`") % 2 == 0 else [text]
    return "`".join(part if i % 2 else re.sub(r"([\\`*_<>\[\]])", r"\\\1", part) for i, part in enumerate(parts))


def _plain_help(ctx: Any) -> str:
    """A command's --help as printed without colour (the app sets no rich markup), lines right-trimmed."""
    return "\n".join(line.rstrip() for line in ctx.get_help().splitlines())


# what `kb search`'s light path leaves to the CLI: --batch reads a file of queries and prints a JSON line each
LIGHT_SEARCH_LEAVES = {"batch"}


def search_flags() -> str:
    """kbtool/surfaces/daemon/search_command.py's FLAGS and DEFAULTS, read from the CLI's declaration of `kb search`
    (and the --kb every command takes before its name): each flag, the search function's parameter it sets and how
    its value reads (click's type), and each parameter's default."""
    import typer.main

    from kbtool.surfaces.cli import app

    group = typer.main.get_command(app)
    command = group.commands["search"]  # type: ignore[attr-defined]  # a group's commands by name
    params = [p for p in command.params if p.name not in LIGHT_SEARCH_LEAVES]
    flags: list[tuple[str, str, str]] = []
    for param in params:
        if param.param_type_name != "option":  # the query: an argument
            continue
        if param.is_flag:
            flags += [(opt, param.name, "true") for opt in param.opts]
            flags += [(opt, param.name, "false") for opt in param.secondary_opts]
            continue
        flags += [(opt, param.name, _value_kind(param)) for opt in param.opts]
    lines = ["FLAGS: dict[str, tuple[str, str]] = {"]
    lines += [f"    {opt!r}: ({name!r}, {kind!r}),".replace("'", '"') for opt, name, kind in flags]
    lines += ["}", "DEFAULTS: dict[str, Any] = {"]
    lines += [f"    {p.name!r}: {p.default!r},".replace("'", '"') for p in params]
    return "\n".join([*lines, "}", ""])


def _value_kind(param: Any) -> str:
    """How `kb search`'s light path reads an option's value: as the CLI would for the types `kb search` declares
    (an int with a least value: int>=N); a type it does not know stops `make docs` rather than be read wrongly.
    By the annotation typer read (typer 0.29 converts values through pydantic, not click's types)."""
    annotation = param.type_descriptor.annotation
    if param.multiple and annotation == list[str]:
        return "list"
    if annotation is int and param.max is None:
        return "int" if param.min is None else f"int>={param.min}"
    if annotation is str:
        return "str"
    if annotation is Path:
        return "path"
    raise TypeError(f"`kb search --{param.name}`: its type {annotation!r} is not one the light path reads")
