"""`kb skill new|list|show|validate|import|export|pack`: the skill registry.

The registry is skills/ in the knowledge base. The commands call the facade (KnowledgeBase.new_skill, skills,
import_skills, export_skills, pack_skill) and print its answers; import and export scan each skill first.
Installing skills into agents is install.py."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbtool.surfaces.cli.base import (
    AllowSecret,
    JsonOut,
    KbPath,
    Where,
    committed,
    open_kb,
    print_json,
    read_text_arg,
    show_notices,
    skill_app,
)

if TYPE_CHECKING:
    from kbtool.store.files import LinkOut

SkillName = Annotated[str, typer.Argument(metavar="NAME", help="A skill's name (its folder under skills/).")]


def _skill_line(skill: Any) -> str:
    return f"{skill.name:<28} {skill.description if len(skill.description) <= 100 else skill.description[:99] + '…'}"


@skill_app.command("new")
def skill_new(
    name: SkillName,
    description: Annotated[
        str, typer.Option(help="What the skill does and when to use it (1-1024 characters; agents match on it).")
    ],
    license: Annotated[str | None, typer.Option(help="A license name, or the name of a bundled license file.")] = None,
    compatibility: Annotated[
        str | None, typer.Option(help="Environment requirements, up to 500 characters (e.g. 'an NVIDIA GPU and nsys').")
    ] = None,
    body_file: Annotated[
        Path | None,
        typer.Option(help="The instructions (markdown) for the body; default: a skeleton of sections to fill in."),
    ] = None,
    allow_secret: AllowSecret = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Create skills/NAME/SKILL.md, one commit."""
    body = read_text_arg(body_file) if body_file is not None else None
    skill = open_kb(kb, allow_secret).new_skill(name, description, license, compatibility, body)
    print_json(skill.to_dict()) if as_json else typer.echo(f"{skill.path}/SKILL.md")


@skill_app.command("list")
def skill_list(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """The valid skills, by name, with their descriptions (--json: the MCP skills tool's answer, each skill's
    fields and files)."""
    from kbtool.skills.spec import skill_folders

    base = open_kb(kb)
    skills = base.skills()
    invalid = len(skill_folders(base.skills_dir, base.root)) - len(skills)
    if as_json:
        print_json(base.skill_list().to_json())
    else:
        for skill in skills:
            typer.echo(_skill_line(skill))
    show_notices(base)  # a skill folder left out: a link out of the knowledge base
    if invalid:
        typer.echo(f"kb: note: {invalid} invalid skill(s) not listed; run `kb skill validate`", err=True)


@skill_app.command("show")
def skill_show(name: SkillName, kb: KbPath = None, as_json: JsonOut = False) -> None:
    """Print a skill's SKILL.md (and, with --json, its fields and files)."""
    from kbtool.skills.spec import render_skill

    skill = open_kb(kb).skill(name)
    print_json(skill.to_dict()) if as_json else typer.echo(render_skill(skill), nl=False)


@skill_app.command("validate")
def skill_validate(
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="[PATH ...]",
            help="Skill folders, or folders of them (default: the knowledge base's skills/).",
            show_default=False,
        ),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Judge skills by the Agent Skills specification; exit 1 on any violation, each one named."""
    from kbtool.skills.registry import skill_sources
    from kbtool.skills.spec import InvalidSkill, discoverability, load_skill, skill_folders

    links: list[LinkOut] = []  # left out: nothing is read through them
    out_of = "the folder given" if paths else "the knowledge base"
    if paths:
        folders = [f for p in paths for f in skill_sources(p, links.append)]
    else:
        base = open_kb(kb)
        folders = skill_folders(base.skills_dir, base.root, links.append)
    report: list[dict[str, Any]] = [
        {"path": str(link.path), "valid": False, "violations": [link.what(out_of)], "warnings": []} for link in links
    ]
    for folder in folders:
        try:
            warnings = [m for _, m in discoverability(load_skill(folder))]
            report.append({"path": str(folder), "valid": True, "violations": [], "warnings": warnings})
        except InvalidSkill as exc:
            report.append({"path": str(folder), "valid": False, "violations": exc.violations, "warnings": []})
    bad = [r for r in report if not r["valid"]]
    if as_json:
        print_json({"ok": not bad, "skills": report})
    else:
        for r in report:
            typer.echo(f"{r['path']}: {'ok' if r['valid'] else 'INVALID'}")
            for v in r["violations"]:
                typer.echo(f"  - {v}")
            for w in r["warnings"]:
                typer.echo(f"  warning: {w}")
        typer.echo(f"{len(report) - len(bad)} valid, {len(bad)} invalid", err=bool(bad))
    if bad:
        raise typer.Exit(1)


@skill_app.command("import")
def skill_import(
    path: Annotated[Path, typer.Argument(help="A skill folder, or a folder of skill folders.")],
    trust: Annotated[
        bool, typer.Option("--trust", help="Import despite high-severity findings of the security scan: you read them.")
    ] = False,
    allow_secret: AllowSecret = False,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Copy valid skills into skills/ in one commit; report each invalid one with its reasons (exit 1 if any).
    Each is scanned first (see `kb skill scan`)."""
    summary = open_kb(kb, allow_secret).import_skills(path, trust)
    if as_json:
        print_json(summary.to_json())
    else:
        for name in summary.added:
            typer.echo(f"added {name}")
        for name in summary.updated:
            typer.echo(f"updated {name}")
        for r in summary.rejected:
            typer.echo(f"kb: rejected {r.path}: {'; '.join(r.violations)}", err=True)
        typer.echo(
            f"{len(summary.added)} added, {len(summary.updated)} updated, {len(summary.rejected)} rejected"
            + committed(summary.commit)
        )
    if summary.rejected:
        raise typer.Exit(1)


@skill_app.command("export")
def skill_export(
    names: Annotated[list[str], typer.Argument(metavar="NAME ...", help="The skills to export.")],
    to: Annotated[Path, typer.Option("--to", help="The folder to copy them into, e.g. .claude/skills.")],
    trust: Annotated[
        bool, typer.Option("--trust", help="Export despite high-severity findings of the security scan: you read them.")
    ] = False,
    kb: KbPath = None,
) -> None:
    """Copy skills to DIR/NAME/ (replacing an earlier export) for an agent to load. Each is scanned first (see
    `kb skill scan`)."""
    for target in open_kb(kb).export_skills(names, to, trust):
        typer.echo(str(target))


@skill_app.command("pack")
def skill_pack(
    name: Annotated[str, typer.Option("--name", help="The new skill's name, e.g. h100-pack.")],
    where: Where = None,
    general: Annotated[
        bool, typer.Option(help="Also take cards that do not set the filtered fields (rules that hold everywhere).")
    ] = False,
    applies_for: Annotated[
        list[str] | None,
        typer.Option(
            "--for",
            help="FIELD=VALUE of the environment the pack is for (hardware=H100; repeatable; default: kb.toml "
            "[environment]): the cards scoped to it, to its family, or general; none scoped elsewhere.",
            show_default=False,
        ),
    ] = None,
    description: Annotated[
        str | None, typer.Option(help="The skill's description (default: made from the filters and counts).")
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """A knowledge-pack skill of the confirmed findings, constraints, failure-modes and gates that match
    --where and apply to --for (cards under references/)."""
    skill = open_kb(kb).pack_skill(name, where or [], general, description, applies_for or [])
    if as_json:
        print_json(skill.to_dict(body=False))
    else:
        typer.echo(f"{skill.path}/SKILL.md: {skill.metadata.get('kb-cards')} cards ({skill.description})")
