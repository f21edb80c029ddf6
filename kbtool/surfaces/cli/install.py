"""The install commands of `kb skill` and `kb agent`: skills, and kb itself, put into coding agents.

`kb skill install / verify / update / remove` and `kb agent install / uninstall / plugin`: skills,
and kb itself, put into coding agents. The work is kbtool.skills.install and kbtool.agents.setup."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from kbtool.model.errors import BadInput, NotAKnowledgeBase
from kbtool.surfaces.cli.base import JsonOut, app, make_app, print_json, root_of, skill_app

if TYPE_CHECKING:
    from kbtool.agents.setup import SetupChange
    from kbtool.skills.install import Installed

agent_app = make_app("kb in coding agents: their MCP configuration and skills folders, in one command.")
app.add_typer(agent_app, name="agent")

To = Annotated[
    Path,
    typer.Option("--to", help="The skills folder (default: .agents/skills here, which Codex, Cursor and others read)."),
]
Force = Annotated[
    bool, typer.Option("--force", help="Replace or remove a skill folder changed since it was installed.")
]
Trust = Annotated[
    bool, typer.Option("--trust", help="Install despite high-severity findings of the security scan: you read them.")
]
KbSpecs = Annotated[
    list[str] | None,
    typer.Option(
        "--kb",
        metavar="[NAME=]PATH",
        help="The knowledge base to serve; repeat for several (default: the one given before the command, $KB_DIR, "
        "or the nearest folder above with kb.toml).",
        show_default=False,
    ),
]


def _optional_root() -> Path | None:
    """The knowledge base here, if there is one: a skill named by its name comes from it."""
    try:
        return root_of(None)
    except NotAKnowledgeBase:
        return None


def _print_installed(done: list[Installed], as_json: bool) -> None:
    if as_json:
        print_json([{"name": d.name, "path": str(d.path), "change": d.change, **d.locked.to_json()} for d in done])
        return
    for d in done:
        for finding in d.findings:
            typer.echo(f"kb: note: scan: {d.name}: {finding.text()}", err=True)
        pin = f" @ {d.locked.commit[:12]}" if d.locked.commit else ""
        ref = f"@{d.locked.ref}" if d.locked.ref else ""
        typer.echo(f"{d.change:<9} {d.path} ({d.locked.source}{ref}{pin}, {d.locked.sha256[:19]}…){d.moved()}")


@skill_app.command("install")
def skill_install(
    source: Annotated[
        str,
        typer.Argument(
            metavar="SOURCE[@REF]",
            help="A skill of this knowledge base (its name), kbtool:kb, a folder, or a git repository (URL or "
            "path; @REF a branch, tag or commit).",
        ),
    ],
    to: To = Path(".agents/skills"),
    skill: Annotated[
        list[str] | None,
        typer.Option("--skill", help="Only this skill of a source holding several (repeatable).", show_default=False),
    ] = None,
    force: Force = False,
    trust: Trust = False,
    as_json: JsonOut = False,
) -> None:
    """Install skills into an agent's skills folder and pin each (source, ref, commit, SHA-256) in its lock file;
    each is scanned first (see `kb skill scan`)."""
    from kbtool.skills.install import install

    _print_installed(install(source, to, _optional_root(), skill or [], force, trust=trust), as_json)


@skill_app.command("verify")
def skill_verify(to: To = Path(".agents/skills"), as_json: JsonOut = False) -> None:
    """Check each installed skill against its lock; exit 1 when one was changed or is missing."""
    from kbtool.skills.install import verify

    checks = verify(to)
    bad = [c for c in checks if c.state in ("modified", "missing")]
    if as_json:
        print_json(
            {
                "ok": not bad,
                "skills": [
                    {"name": c.name, "path": str(c.path), "state": c.state, "expected": c.expected, "actual": c.actual}
                    for c in checks
                ],
            }
        )
    else:
        for check in checks:
            typer.echo(check.line())
        locked = [c for c in checks if c.state != "unlocked"]
        typer.echo(
            f"{len(locked) - len(bad)} of {len(locked)} installed skills match the lock" if locked else "none installed"
        )
    if bad:
        raise typer.Exit(1)


@skill_app.command("update")
def skill_update(
    names: Annotated[
        list[str] | None, typer.Argument(metavar="[NAME ...]", help="Default: every installed skill.")
    ] = None,
    to: To = Path(".agents/skills"),
    force: Force = False,
    trust: Trust = False,
    as_json: JsonOut = False,
) -> None:
    """Fetch installed skills again (git ones at the newest commit of their branch, or newest tag) and re-pin."""
    from kbtool.skills.install import update

    _print_installed(update(to, names or [], _optional_root(), force, trust), as_json)


@skill_app.command("remove")
def skill_remove(
    names: Annotated[list[str], typer.Argument(metavar="NAME ...", help="Installed skills to remove.")],
    to: To = Path(".agents/skills"),
    force: Force = False,
) -> None:
    """Delete installed skills and their lock entries (a skill changed since it was installed stays, unless --force)."""
    from kbtool.skills.install import remove

    for path in remove(to, names, force):
        typer.echo(f"removed   {path}")


@skill_app.command("scan")
def skill_scan(
    paths: Annotated[list[Path], typer.Argument(metavar="PATH ...", help="Skill folders, or folders of them.")],
    fail_on: Annotated[
        str, typer.Option("--fail-on", help="Exit 1 on a finding of this severity or above: low, medium, high.")
    ] = "medium",
    as_json: JsonOut = False,
) -> None:
    """Look for what could turn an agent against its user: hidden text, downloads piped into a shell, files or
    the environment sent to a URL, links out of the folder, unmentioned executables, allowed-tools too wide."""
    from kbtool.skills.registry import skill_sources
    from kbtool.skills.scan import SEVERITIES, at_least, scan_skill

    if fail_on not in SEVERITIES:
        raise BadInput(f"--fail-on {fail_on}: give {', '.join(SEVERITIES)}")
    report = {str(folder): scan_skill(folder) for path in paths for folder in skill_sources(path)}
    failing = [f for found in report.values() for f in at_least(found, fail_on)]
    if as_json:
        print_json(
            {
                "ok": not failing,
                "fail_on": fail_on,
                "skills": [{"path": p, "findings": [f.to_json() for f in found]} for p, found in report.items()],
            }
        )
    else:
        for path, found in report.items():
            typer.echo(f"{path}: {'clean' if not found else f'{len(found)} finding(s)'}")
            for finding in found:
                typer.echo(f"  {finding.text()}")
        total = sum(len(found) for found in report.values())
        typer.echo(f"{len(report)} skill(s), {total} finding(s), {len(failing)} at {fail_on} or above")
    if failing:
        raise typer.Exit(1)


def _clients(claude: bool, codex: bool, cursor: bool, agents: bool) -> list[str]:
    return [
        name for name, given in (("claude", claude), ("codex", codex), ("cursor", cursor), ("agents", agents)) if given
    ]


def _scope(project: bool, user: bool) -> str:
    if project and user:
        raise BadInput("give --project or --user, not both")
    return "user" if user else "project"


def _print_changes(changes: list[SetupChange], as_json: bool) -> None:
    if as_json:
        print_json([{"change": c.what, "path": str(c.path), "detail": c.detail} for c in changes])
    else:
        for change in changes:
            typer.echo(change.line())


Claude = Annotated[bool, typer.Option("--claude", help="Claude Code: .mcp.json / ~/.claude.json, .claude/skills.")]
Codex = Annotated[
    bool, typer.Option("--codex", help="Codex: .codex/config.toml / ~/.codex/config.toml, .agents/skills.")
]
Cursor = Annotated[bool, typer.Option("--cursor", help="Cursor: .cursor/mcp.json, .cursor/skills.")]
Agents = Annotated[bool, typer.Option("--agents", help="The shared .agents/skills folder (skills only).")]
Project = Annotated[bool, typer.Option("--project", help="Into the project folder (the default).")]
User = Annotated[bool, typer.Option("--user", help="Into your home folder: every project sees it.")]
Where = Annotated[Path, typer.Option("--dir", help="The project folder (default: here).")]
Name = Annotated[str, typer.Option("--name", help="The MCP server's name in the client's configuration.")]


@agent_app.command("install")
def agent_install(
    claude: Claude = False,
    codex: Codex = False,
    cursor: Cursor = False,
    agents: Agents = False,
    project: Project = False,
    user: User = False,
    read_only: Annotated[bool, typer.Option("--read-only", help="Serve only the reading tools.")] = False,
    kb: KbSpecs = None,
    where: Where = Path("."),
    name: Name = "kb",
    hooks: Annotated[
        bool,
        typer.Option(
            "--hooks",
            help="Also the hooks (Claude Code: .claude/settings.json, Codex: .codex/hooks.json, Cursor: "
            ".cursor/hooks.json): on session start (and after a clear or a compaction) `kb brief` is added to "
            "the context; on stop the agent is kept working while a locked gate has no passing run of the "
            "candidate as it is now.",
        ),
    ] = False,
    as_json: JsonOut = False,
) -> None:
    """Put kb into agents: the MCP server entry (absolute paths to this kb and knowledge base) and the
    kb skill (--hooks: the agent's hooks too); run again, it changes nothing, and it says what it changed."""
    from kbtool.agents.setup import install_into

    specs = kb or [str(root_of(None))]
    changes = install_into(
        _clients(claude, codex, cursor, agents), _scope(project, user), where, specs, read_only, name, hooks=hooks
    )
    _print_changes(changes, as_json)


@agent_app.command("uninstall")
def agent_uninstall(
    claude: Claude = False,
    codex: Codex = False,
    cursor: Cursor = False,
    agents: Agents = False,
    project: Project = False,
    user: User = False,
    where: Where = Path("."),
    name: Name = "kb",
    force: Force = False,
    as_json: JsonOut = False,
) -> None:
    """Take out what `kb agent install` put in: kb's MCP entry and hooks, and the kb skill while it is as installed."""
    from kbtool.agents.setup import uninstall_from

    changes = uninstall_from(_clients(claude, codex, cursor, agents), _scope(project, user), where, name, force=force)
    _print_changes(changes, as_json)


@agent_app.command("plugin")
def agent_plugin(
    folder: Annotated[
        Path, typer.Argument(metavar="DIR", help="The plugin folder to write (new, empty, or an earlier one).")
    ],
    kb: KbSpecs = None,
    read_only: Annotated[bool, typer.Option("--read-only", help="Serve only the reading tools.")] = False,
    name: Annotated[str | None, typer.Option("--name", help="The plugin's name (default: <kb name>-kb).")] = None,
    as_json: JsonOut = False,
) -> None:
    """A Claude Code plugin (its own marketplace) of the knowledge base: kb serve over MCP and its skills."""
    from kbtool.agents.setup import write_plugin

    _print_changes(write_plugin(folder, kb or [str(root_of(None))], read_only, name), as_json)
