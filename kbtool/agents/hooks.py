"""The hooks `kb agent install --hooks` puts into a coding agent: on session start, `kb hook session-start`
adds `kb brief` to the context; on stop, `kb hook stop` keeps the agent working while a locked gate has
no passing run of the candidate as it is now (kbtool/surfaces/cli/briefing.py answers both).

Claude Code reads hooks from .claude/settings.json (~/.claude/settings.json for the user), Codex from
.codex/hooks.json ($CODEX_HOME/hooks.json), both as {"hooks": {EVENT: [{"matcher", "hooks": [{"type":
"command", "command"}]}]}}, with the same input on stdin and the same SessionStart and Stop output
(https://code.claude.com/docs/en/hooks, https://developers.openai.com/codex/hooks). They differ in the
SessionStart sources: Claude Code's include `compact` (a session continued after a compaction), Codex's
are startup, resume and clear only, so after a compaction in Codex the brief is not added again by itself.
"""

from __future__ import annotations

import shlex
import tempfile
from pathlib import Path
from typing import Any

from kbtool.agents.config_files import put_hooks
from kbtool.agents.targets import Target

HOOK_CLIENTS = ("claude", "codex")
# not /clear: whoever clears a session asked for a clean slate
SESSION_SOURCES = {"claude": "startup|resume|compact", "codex": "startup|resume"}


def hooks_file(t: Target) -> Path | None:
    """The file the client reads hooks from, for the target's scope; None for a client without hooks."""
    if t.client == "claude":
        return t.skills.parent / "settings.json"  # .claude/, beside its skills folder
    if t.client == "codex" and t.config is not None:
        return t.config.parent / "hooks.json"  # .codex/ or $CODEX_HOME, beside config.toml
    return None


def hook_groups(client: str, kb: list[str]) -> dict[str, dict[str, Any]]:
    """kb's matcher group for each event: SessionStart on a new session, a resumed one and (Claude Code)
    after a compaction; Stop on every stop. kb: the command that runs this kb on its knowledge base."""

    def run(*args: str) -> dict[str, Any]:
        return {"type": "command", "command": shlex.join([*kb, "hook", *args])}

    return {
        "SessionStart": {"matcher": SESSION_SOURCES[client], "hooks": [run("session-start")]},
        "Stop": {"hooks": [run("stop")]},
    }


def check_hooks_file(path: Path, client: str) -> None:
    """put_hooks on a copy: the file reads, and is a JSON object kb's hooks can be merged into."""
    if not path.exists():
        return
    with tempfile.TemporaryDirectory() as scratch:
        copy = Path(scratch) / path.name
        copy.write_bytes(path.read_bytes())
        put_hooks(copy, hook_groups(client, ["kb"]))
