"""Where each agent client reads MCP servers and skills, for one project or for the user.

Sources: Claude Code keeps a project's servers in .mcp.json and the user's in ~/.claude.json
(top-level "mcpServers"), skills in .claude/skills and ~/.claude/skills
(https://code.claude.com/docs/en/mcp, https://code.claude.com/docs/en/skills). Codex reads
[mcp_servers.<name>] from ~/.codex/config.toml ($CODEX_HOME) and, in a trusted project, from
.codex/config.toml; its skills from .agents/skills and ~/.agents/skills
(https://developers.openai.com/codex/mcp, https://developers.openai.com/codex/skills). Cursor reads
.cursor/mcp.json and ~/.cursor/mcp.json, skills from .cursor/skills and ~/.cursor/skills
(https://cursor.com/docs/context/mcp, https://cursor.com/docs/context/skills). `agents` is the
folder the Agent Skills clients share (.agents/skills): skills only, there is no shared MCP file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from kbtool.model.errors import BadInput

CLIENTS = ("claude", "codex", "cursor", "agents")
SCOPES = ("project", "user")


@dataclass(frozen=True)
class Target:
    client: str
    scope: str
    config: Path | None  # the MCP configuration file, None when the client has none kb can write
    skills: Path  # the folder the client loads skills from

    @property
    def config_format(self) -> str | None:
        if self.config is None:
            return None
        return "toml" if self.config.suffix == ".toml" else "json"


def target(client: str, scope: str, project: Path, home: Path | None = None) -> Target:
    """client's files for scope: under project (a folder) or under home (default: the user's)."""
    if client not in CLIENTS:
        raise BadInput(f"unknown client {client!r}; kb installs into {', '.join(CLIENTS)}")
    if scope not in SCOPES:
        raise BadInput(f"unknown scope {scope!r}; give {' or '.join(SCOPES)}")
    home = home if home is not None else Path.home()
    base = project if scope == "project" else home
    if client == "claude":
        config = project / ".mcp.json" if scope == "project" else home / ".claude.json"
        return Target(client, scope, config, base / ".claude" / "skills")
    if client == "codex":
        codex_home = Path(os.environ["CODEX_HOME"]) if os.environ.get("CODEX_HOME") else home / ".codex"
        config = project / ".codex" / "config.toml" if scope == "project" else codex_home / "config.toml"
        return Target(client, scope, config, base / ".agents" / "skills")
    if client == "cursor":
        return Target(client, scope, base / ".cursor" / "mcp.json", base / ".cursor" / "skills")
    return Target(client, scope, None, base / ".agents" / "skills")
