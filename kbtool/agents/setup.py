"""`kb agent install / uninstall / plugin`: kb put into a coding agent in one command.

install writes the client's MCP entry (`kb serve` with absolute paths to this kb and to the
knowledge bases) and installs the kb skill into the client's skills folder, pinned in that folder's
lock; run again, it changes nothing. uninstall takes out exactly what install put in: the entry
only while it is kb's, the skill only while it is as installed. plugin writes a Claude Code plugin
folder (its own one-plugin marketplace) a team can publish.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kbtool.agents.config_files import drop_hooks, drop_server, put_hooks, put_server
from kbtool.agents.hooks import HOOK_CLIENTS, check_hooks_file, file_keys, hook_groups, hooks_file
from kbtool.agents.targets import Target, target
from kbtool.model.errors import BadInput, Conflict
from kbtool.skills.bundled import KB_SKILL
from kbtool.skills.install import BUNDLED, install, remove
from kbtool.skills.lock import Lock
from kbtool.skills.spec import SKILL_FILE, check_skill, skill_folders
from kbtool.store.config import load_config
from kbtool.store.files import LinkOut
from kbtool.store.locate import named_root
from kbtool.store.repository import SKILLS_DIR


@dataclass(frozen=True)
class SetupChange:
    what: str  # added, updated, unchanged, removed, absent, kept, skipped (a link out of the knowledge base)
    path: Path
    detail: str

    def line(self) -> str:
        return f"{self.what:<9} {self.path}: {self.detail}"


def _mcp_installed() -> bool:
    from importlib.util import find_spec

    try:
        return find_spec("mcp") is not None
    except (ImportError, ValueError):
        return False


def kb_command() -> list[str]:
    """This kb, by absolute path: the `kb` script beside the running Python (a venv's bin/), else
    the interpreter running kbtool as a module."""
    script = Path(sys.executable).parent / "kb"
    if script.is_file() and os.access(script, os.X_OK):
        return [str(script)]
    return [sys.executable, "-m", "kbtool"]


def served(specs: Iterable[str]) -> list[tuple[str | None, Path]]:
    """The knowledge bases to serve, each `[NAME=]PATH` checked to be one; none given: the one here."""
    named = [named_root(spec) for spec in specs] or [named_root(".")]
    roots = [root for _, root in named]
    if len(set(roots)) < len(roots):
        raise BadInput("--kb: the same knowledge base is given twice")
    return named


def serve_args(named: list[tuple[str | None, Path]], read_only: bool) -> list[str]:
    args = ["serve"]
    for name, root in named:
        args += ["--kb", f"{name}={root}" if name else str(root)]
    return args + (["--read-only"] if read_only else [])


def kb_skill_source(kb_root: Path) -> str:
    """The knowledge base's own kb skill when it has one (a team may have adapted it), else kbtool's."""
    return f"kb:{KB_SKILL}" if (kb_root / SKILLS_DIR / KB_SKILL / SKILL_FILE).is_file() else BUNDLED


# Codex gives a server 10 s to start and a tool 60 s to answer (https://developers.openai.com/codex/mcp):
# `kb serve` took 3-6 s to start on a loaded machine, and a gate run is a benchmark of minutes.
CODEX_TIMEOUTS = {"startup_timeout_sec": 30, "tool_timeout_sec": 600}


def server_entry(runs: list[str], named: list[tuple[str | None, Path]], read_only: bool, client: str) -> dict[str, Any]:
    """The MCP entry for one client. KB_AGENT names the agent its sessions write as: over stdio the server
    takes the agent's name from there and never from what the client calls itself (a session without it is
    an agent of its own, which cannot edit what the last session wrote)."""
    entry: dict[str, Any] = {"command": runs[0], "args": [*runs[1:], *serve_args(named, read_only)]}
    if client == "codex":
        entry.update(CODEX_TIMEOUTS)
    return {**entry, "env": {"KB_AGENT": client}}


def targets(clients: Iterable[str], scope: str, project: Path, home: Path | None) -> list[Target]:
    chosen = list(dict.fromkeys(clients))
    if not chosen:
        raise BadInput("name a client: --claude, --codex, --cursor or --agents")
    return [target(client, scope, project.resolve(), home) for client in chosen]


def install_into(
    clients: Iterable[str],
    scope: str,
    project: Path,
    kb_specs: Iterable[str] = (),
    read_only: bool = False,
    name: str = "kb",
    home: Path | None = None,
    hooks: bool = False,
) -> list[SetupChange]:
    """kb into each client: its MCP entry and the kb skill, and with hooks its SessionStart and Stop
    hooks (kbtool/agents/hooks.py; Claude Code, Codex and Cursor). Everything is checked (the knowledge bases,
    each configuration file
    readable and free of a foreign server of that name) before anything is written."""
    named = served(kb_specs)
    chosen = targets(clients, scope, project, home)
    if hooks and any(t.client not in HOOK_CLIENTS for t in chosen):
        raise BadInput(
            "--hooks: --agents is a skills folder, not an agent with hooks; give --claude, --codex or --cursor; "
            "nothing was written"
        )
    if any(t.config is not None for t in chosen) and not _mcp_installed():
        raise BadInput(
            "the MCP entry would run `kb serve`, which needs the MCP SDK (not in this install): "
            "pip install 'kbtool[mcp]', or --agents for the kb skill alone; nothing was written"
        )
    runs = kb_command()
    default_root = named[0][1]
    changes: list[SetupChange] = []
    for t in chosen:  # a dry pass: a foreign entry or an unreadable file stops it all here
        _check_writable(t, name, server_entry(runs, named, read_only, t.client))
        settings = hooks_file(t)
        if hooks and settings is not None:
            check_hooks_file(settings, t.client)
    for t in chosen:
        if t.config is not None and t.config_format is not None:
            entry = server_entry(runs, named, read_only, t.client)
            command = " ".join([entry["command"], *entry["args"]])
            what = put_server(t.config, t.config_format, name, entry)
            changes.append(SetupChange(what, t.config, f"MCP server {name!r}: {command}"))
        for done in install(kb_skill_source(default_root), t.skills, default_root):
            if all(c.path != done.path for c in changes):
                changes.append(SetupChange(done.change, done.path, f"the kb skill ({done.locked.sha256[:19]}…)"))
        settings = hooks_file(t)
        if hooks and settings is not None:
            groups = hook_groups(t.client, [*runs, "--kb", str(default_root)])
            what = put_hooks(settings, groups, file_keys(t.client))
            changes.append(SetupChange(what, settings, "hooks: SessionStart (kb brief), Stop (the locked gates)"))
    return changes


def _check_writable(t: Target, name: str, entry: dict[str, Any]) -> None:
    """put_server on a copy of the file: it reads, and any server of that name is kb's."""
    import tempfile

    if t.config is None or t.config_format is None or not t.config.exists():
        return
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / t.config.name
        copy.write_bytes(t.config.read_bytes())
        put_server(copy, t.config_format, name, entry)


def uninstall_from(
    clients: Iterable[str], scope: str, project: Path, name: str = "kb", home: Path | None = None, force: bool = False
) -> list[SetupChange]:
    """What install put in, taken out: kb's MCP entry, and the kb skill while it is as installed
    (one changed since stays, and says so, unless force)."""
    changes: list[SetupChange] = []
    chosen = targets(clients, scope, project, home)
    for t in chosen:
        if t.config is not None and t.config_format is not None:
            what = drop_server(t.config, t.config_format, name)
            detail = {
                "removed": f"MCP server {name!r}",
                "absent": f"no MCP server {name!r}",
                "kept": f"MCP server {name!r} is not kb's; left as it is",
            }[what]
            changes.append(SetupChange(what, t.config, detail))
        settings = hooks_file(t)
        if settings is not None and drop_hooks(settings, file_keys(t.client)) == "removed":
            changes.append(SetupChange("removed", settings, "kb's hooks"))
        skill = t.skills / KB_SKILL
        if any(c.path == skill for c in changes):
            continue
        if not t.skills.is_dir() or KB_SKILL not in Lock(t.skills).skills:
            changes.append(SetupChange("absent", skill, "the kb skill was not installed here by kb"))
            continue
        try:
            remove(t.skills, [KB_SKILL], force)
            changes.append(SetupChange("removed", skill, "the kb skill"))
        except Conflict:
            changes.append(SetupChange("kept", skill, "changed since it was installed; --force removes it"))
    for t in chosen:  # the folders install made for them, when nothing else is left in them
        base = (project.resolve() if scope == "project" else (home or Path.home())).resolve()
        for leaf in (t.skills, t.config.parent if t.config is not None else None):
            _prune_empty(leaf, base)
    return changes


def _prune_empty(folder: Path | None, base: Path) -> None:
    """Remove folder and its parents up to (not including) base, as long as each is empty."""
    while folder is not None and folder != base and base in folder.parents:
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            return
        folder = folder.parent


def write_plugin(
    folder: Path, kb_specs: Iterable[str] = (), read_only: bool = False, name: str | None = None
) -> list[SetupChange]:
    """A Claude Code plugin in folder: .claude-plugin/plugin.json and marketplace.json (the folder is
    its own marketplace), .mcp.json running `kb serve` (kb from PATH; each knowledge base at
    ${KB_DIR...}, defaulting to its path here), and skills/: the kb skill and every valid skill of
    the first knowledge base."""
    named = served(kb_specs)
    root = named[0][1]
    config = load_config(root)
    plugin = name or _kebab(f"{config.kb.name}-kb")
    folder = folder.resolve()
    manifest = folder / ".claude-plugin" / "plugin.json"
    if folder.exists() and any(folder.iterdir()) and not manifest.is_file():
        raise Conflict(f"{folder} is not empty and holds no plugin; give an empty or new folder")
    description = f"The {config.kb.name} knowledge base over MCP (kb serve) and its skills"
    version = _version(root)
    args = ["serve"]
    for index, (given, kb_root) in enumerate(named):
        variable = "KB_DIR" if index == 0 else f"KB_DIR_{_kebab(given or str(index)).upper().replace('-', '_')}"
        path = f"${{{variable}:-{kb_root}}}"
        args += ["--kb", f"{given}={path}" if given else path]
    args += ["--read-only"] if read_only else []
    files: dict[Path, Any] = {
        manifest: {"name": plugin, "version": version, "description": description},
        folder / ".claude-plugin" / "marketplace.json": {
            "name": plugin,
            "owner": {"name": config.kb.name},
            "plugins": [{"name": plugin, "source": "./", "description": description, "version": version}],
        },
        folder / ".mcp.json": {"mcpServers": {"kb": {"command": "kb", "args": args}}},
    }
    changes = []
    for written, data in files.items():
        text = json.dumps(data, indent=2, ensure_ascii=False) + "\n"
        before = written.read_text(encoding="utf-8") if written.is_file() else None
        if before != text:
            written.parent.mkdir(parents=True, exist_ok=True)
            written.write_text(text, encoding="utf-8")
        what = "unchanged" if before == text else "updated" if before else "added"
        changes.append(SetupChange(what, written, "manifest"))
    skills = folder / SKILLS_DIR
    links: list[LinkOut] = []  # a skill folder that leads out of the knowledge base: not the knowledge base's
    in_kb = skill_folders(root / SKILLS_DIR, root, links.append)
    changes += [SetupChange("skipped", found.path, found.what()) for found in links]
    valid = []
    for skill_folder in (f for f in in_kb if f.name != KB_SKILL):
        violations = check_skill(skill_folder)  # a link in it among them: nothing of an invalid skill is copied
        if violations:
            changes.append(SetupChange("skipped", skill_folder, f"not a valid skill: {violations[0]}"))
        else:
            valid.append(skill_folder)
    sources = [kb_skill_source(root), *(f"kb:{f.name}" for f in valid)]
    kept = set()
    for source in sources:
        for done in install(source, skills, root, force=True):
            changes.append(SetupChange(done.change, done.path, f"skill {done.name}"))
            kept.add(done.name)
    gone = sorted(set(Lock(skills).skills) - kept)  # skills the knowledge base no longer has
    changes += [SetupChange("removed", path, f"skill {path.name}") for path in remove(skills, gone, force=True)]
    return changes


def _kebab(text: str) -> str:
    out = "".join(c.lower() if c.isalnum() else "-" for c in text)
    return "-".join(part for part in out.split("-") if part) or "kb"


def _version(root: Path) -> str:
    """kbtool's version, with the knowledge base's commit as build metadata: a new commit is a new plugin."""
    from kbtool import __version__

    out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True)
    return f"{__version__}+{out.stdout.strip()}" if out.returncode == 0 and out.stdout.strip() else __version__
