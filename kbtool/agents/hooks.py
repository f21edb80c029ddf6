"""The session-start and stop hooks `kb agent install --hooks` puts into a coding agent.

The hooks `kb agent install --hooks` puts into a coding agent: on session start, `kb hook session-start`
adds `kb brief` to the context; on stop, `kb hook stop` keeps the agent working while a locked gate has
no passing run of the candidate as it is now (kbtool/surfaces/cli/briefing.py answers both).

Claude Code reads hooks from .claude/settings.json (~/.claude/settings.json for the user), Codex from
.codex/hooks.json ($CODEX_HOME/hooks.json), both as {"hooks": {EVENT: [{"matcher", "hooks": [{"type":
"command", "command"}]}]}}, with the same input on stdin and the same SessionStart and Stop output
(https://code.claude.com/docs/en/hooks, https://developers.openai.com/codex/hooks). Both start a session
from the sources startup, resume, clear and compact (Codex added compact in openai/codex#21272): a cleared
session starts empty and a compacted one lost what the brief said, so every source gets the brief.

Cursor reads .cursor/hooks.json (~/.cursor/hooks.json for the user) as {"version": 1, "hooks": {event:
[{"command"}]}} with camelCase events (sessionStart, stop), its own input (conversation_id,
workspace_roots; stop adds status and loop_count) and its own output (additional_context, followup_message)
(https://cursor.com/docs/agent/hooks): its commands carry --cursor so kb answers in Cursor's words.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

from kbtool.agents.config_files import put_hooks
from kbtool.agents.targets import Target

HOOK_CLIENTS = ("claude", "codex", "cursor")
SESSION_SOURCES = "startup|resume|clear|compact"
CURSOR_FILE_KEYS = {"version": 1}  # the hooks.json format version Cursor reads


def hooks_file(t: Target) -> Path | None:
    """The file the client reads hooks from, for the target's scope; None for a client without hooks."""
    if t.client == "claude":
        return t.skills.parent / "settings.json"  # .claude/, beside its skills folder
    if t.client in ("codex", "cursor") and t.config is not None:
        return t.config.parent / "hooks.json"  # .codex/ or $CODEX_HOME beside config.toml; .cursor/ beside mcp.json
    return None


def file_keys(client: str) -> dict[str, Any]:
    """Top-level keys the client's hooks file must hold besides the hooks."""
    return CURSOR_FILE_KEYS if client == "cursor" else {}


def hook_groups(client: str, kb: list[str]) -> dict[str, dict[str, Any]]:
    """kb's entry for each event: SessionStart on every source a session starts from, Stop on every stop
    (Cursor: one flat command entry per camelCase event). kb: the command that runs this kb on its knowledge
    base."""

    def command(*args: str) -> str:
        return shlex.join([*kb, "hook", *args])

    if client == "cursor":
        return {
            "sessionStart": {"command": command("session-start", "--cursor")},
            "stop": {"command": command("stop", "--cursor")},
        }

    def run(*args: str) -> dict[str, Any]:
        return {"type": "command", "command": command(*args)}

    return {
        "SessionStart": {"matcher": SESSION_SOURCES, "hooks": [run("session-start")]},
        "Stop": {"hooks": [run("stop")]},
    }


def check_hooks_file(path: Path, client: str) -> None:
    """put_hooks on a copy: the file reads, and is a JSON object kb's hooks can be merged into."""
    if not path.exists():
        return
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / path.name
        copy.write_bytes(path.read_bytes())
        put_hooks(copy, hook_groups(client, ["kb"]), file_keys(client))
