"""`kb brief` and `kb hook session-start / stop`: what keeps a long agent session on its goal.

The brief is what an agent needs after a context compaction; the hooks are the commands `kb agent install --hooks`
puts into Claude Code's, Codex's or Cursor's hooks file (kbtool/agents/hooks.py), run by the agent with its hook
input as JSON on stdin, answering with its documented hook output (https://code.claude.com/docs/en/hooks, which
Codex shares; with --cursor, https://cursor.com/docs/agent/hooks)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbtool.model.errors import KbError, one_line
from kbtool.surfaces.cli.base import For, JsonOut, KbPath, app, git_top, make_app, open_kb, print_json, project_dir

if TYPE_CHECKING:
    from kbtool.model.contracts import GateStanding

hook_app = make_app("The commands an agent's hooks run (kb agent install --hooks): JSON in, JSON out.")
app.add_typer(hook_app, name="hook")


@app.command()
def brief(applies_for: For = None, kb: KbPath = None, as_json: JsonOut = False) -> None:
    """What an agent needs after a context compaction, within 2k tokens: the locked gates with their last
    run and whether it judged the candidate as it is now, the must-constraints and open gaps that apply
    (--for; the sources' too), the latest findings and what waits for review; each section capped, saying
    what shows all."""
    answer = open_kb(kb).brief(applies_for, default_dir=project_dir())
    if as_json:
        print_json(answer.to_json())
    else:
        typer.echo(answer.text(), nl=False)


MAX_HOOK_INPUT = 1 << 20  # bytes of stdin a hook reads: Claude Code's input is a few hundred (the transcript by path)


class Unreadable(Exception):
    """Hook input kb cannot read; its message says why, in a few words."""


def _hook_input() -> dict[str, Any]:
    """Claude Code's hook input: a JSON object on stdin (session_id, transcript_path, cwd, hook_event_name,
    and the event's own fields); Unreadable when stdin is not one kb can read."""
    try:
        raw = sys.stdin.buffer.read(MAX_HOOK_INPUT + 1)
    except OSError as exc:
        raise Unreadable(f"stdin cannot be read ({exc.strerror or exc})") from None
    if len(raw) > MAX_HOOK_INPUT:
        raise Unreadable(f"stdin holds over {MAX_HOOK_INPUT >> 20} MB")
    try:
        data = json.loads(raw.decode("utf-8") or "null")
    except (ValueError, UnicodeDecodeError):
        raise Unreadable("stdin is not a JSON object") from None
    except RecursionError:
        raise Unreadable("stdin is JSON nested too deeply to read") from None
    if not isinstance(data, dict):
        raise Unreadable("stdin is not a JSON object")
    return data


def _project_of(given: dict[str, Any]) -> Path:
    """The agent's project: the git repository holding the input's cwd (Cursor: its first workspace root; else
    this process's cwd), whatever cwd holds."""
    roots = given.get("workspace_roots")
    cwd = given.get("cwd", roots[0] if isinstance(roots, list) and roots else None)
    try:
        here = Path(cwd) if isinstance(cwd, str) and Path(cwd).is_dir() else Path.cwd()
        return git_top(here) or here
    except (OSError, ValueError):  # a path too long, a NUL, a folder that cannot be entered
        raise Unreadable(f"cwd {str(cwd)[:60]!r}... is not a folder kb can read") from None


# A hook must never break the agent's session: Claude Code reads a non-zero exit as a failed hook (exit 2
# even blocks), so every fault here (stdin that is not the documented JSON or cannot be read, a cwd no path
# can be, no knowledge base, a kb.lock that does not parse, a bug in kb) ends with exit 0 and no output,
# saying why in one line on stderr only (shown in verbose mode).


@contextmanager
def _never_breaks(event: str, outcome: str) -> Iterator[None]:
    try:
        yield
    except Unreadable as exc:
        typer.echo(f"kb hook {event}: {exc}; {outcome}", err=True)
    except KbError as exc:
        typer.echo(f"kb hook {event}: {one_line(str(exc), type(exc).__name__)}; {outcome}", err=True)
    except Exception as exc:  # a bug, or input kb did not foresee: the session goes on all the same
        said = one_line(f"{type(exc).__name__}: {exc}", type(exc).__name__)
        typer.echo(f"kb hook {event}: internal error ({said}); {outcome}", err=True)


CursorOut = Annotated[bool, typer.Option("--cursor", help="Read Cursor's hook input and answer in its words.")]


@hook_app.command("session-start")
def hook_session_start(kb: KbPath = None, cursor: CursorOut = False) -> None:
    """SessionStart (sources startup, resume, clear, compact; Cursor's sessionStart): print `kb brief` as the
    session's additional context."""
    with _never_breaks("session-start", "nothing added"):
        given = _hook_input()
        text = open_kb(kb).brief(default_dir=_project_of(given)).text()
        output: dict[str, Any] = {"additional_context": text}
        if not cursor:
            output = {"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}}
        typer.echo(json.dumps(output, ensure_ascii=False))


@hook_app.command("stop")
def hook_stop(kb: KbPath = None, cursor: CursorOut = False) -> None:
    """Stop: keep the agent working (decision block with the reason; Cursor: a followup_message) while a locked
    gate has no passing run kb made of the candidate as it is now, judged in the project the gate ran in (not
    the hook's cwd); let it stop when a stop hook already kept it going (stop_hook_active; Cursor's loop_count),
    so it never blocks forever, and (Cursor) when the person aborted the turn or it ended in an error."""
    with _never_breaks("stop", "the agent may stop"):
        given = _hook_input()
        if given.get("stop_hook_active") is True:  # kb already kept it going once this turn: it stops now
            return
        if cursor and (given.get("loop_count") not in (0, None) or given.get("status", "completed") != "completed"):
            return
        unmet = [g for g in open_kb(kb).gate_standings(_project_of(given)) if not g.met]
        if unmet:
            reason = stop_reason(unmet)
            said = {"followup_message": reason} if cursor else {"decision": "block", "reason": reason}
            typer.echo(json.dumps(said, ensure_ascii=False))


def stop_reason(unmet: list[GateStanding]) -> str:
    lines = [f"The goal is not met: {len(unmet)} locked gate(s) have no passing run of the candidate as it is now."]
    lines += [f"- {g.id}: {g.why}" for g in unmet[:5]]
    lines.append(
        "Keep working toward it, then run each (`kb gate run ID`, or the MCP gate_run tool) on the candidate; "
        "stop when they pass, or say why they cannot."
    )
    return "\n".join(lines)
