"""One MCP server entry put into, or taken out of, a client's configuration file.

The rest of the file stays as it was. JSON files ("mcpServers", as Claude Code and Cursor read them) are read and
rewritten whole with their other keys kept, in the layout they had where json.dumps writes it; Codex's config.toml
gets a marked block of its own (appended, replaced, removed), so its comments and layout are never touched. kb's
hook groups go into a client's hooks file (kbtool/agents/hooks.py) the same way.

Every new text is checked before it is written (it parses, and it holds the entry), and written by
a rename, so a client never reads half a file, and a file kb cannot read is left alone.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput, Conflict
from kbtool.model.parsing import Unparsable, json_input, toml_document

BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def is_kb_server(entry: Any) -> bool:
    """Whether a server entry runs `kb serve` (kb's to replace or remove), by its command and args."""
    if not isinstance(entry, dict):
        return False
    command = str(entry.get("command", ""))
    args = [str(a) for a in entry.get("args") or []]
    runs_kb = Path(command).name == "kb" or "kbtool" in args
    return runs_kb and "serve" in args


def put_server(path: Path, fmt: str, name: str, entry: dict[str, Any]) -> str:
    """Add or replace the entry; 'added', 'updated' or 'unchanged'. A server of that name that is not
    kb's is a Conflict: it belongs to someone else."""
    old = _read(path)
    if fmt == "json":
        data = _json(path, old)
        servers = data.setdefault("mcpServers", {})
        if not isinstance(servers, dict):
            raise BadInput(f"{path}: mcpServers is not an object; nothing was written")
        before = servers.get(name)
        if before == entry:
            return "unchanged"
        _refuse_foreign(path, name, before)
        servers[name] = entry
        _write(path, _dumps_like(data, old))
    else:
        before = _toml(path, old).get("mcp_servers", {}).get(name)
        if before == entry:
            return "unchanged"
        ours = _block(old, name)
        if ours is None:
            _refuse_foreign(path, name, before, in_block=False)
        new = _without_block(old, name) if ours is not None else (old or "")
        new = (new.rstrip("\n") + "\n\n" if new.strip() else "") + _toml_block(name, entry)
        if _toml(path, new).get("mcp_servers", {}).get(name) != entry:
            raise BadInput(f"{path}: adding [mcp_servers.{name}] would not read back as written; nothing was written")
        _write(path, new)
    return "added" if before is None else "updated"


def drop_server(path: Path, fmt: str, name: str) -> str:
    """Take kb's entry out; 'removed', 'absent', or 'kept' when the entry is not kb's. A file left
    holding nothing else is deleted: kb made it."""
    old = _read(path)
    if old is None:
        return "absent"
    if fmt == "json":
        data = _json(path, old)
        servers = data.get("mcpServers")
        if not isinstance(servers, dict) or name not in servers:
            return "absent"
        if not is_kb_server(servers[name]):
            return "kept"
        del servers[name]
        if not servers:
            del data["mcpServers"]
        new = _dumps_like(data, old) if data else ""
    else:
        if _block(old, name) is None:
            return "kept" if name in _toml(path, old).get("mcp_servers", {}) else "absent"
        new = _without_block(old, name)
        _toml(path, new)
    if new.strip():
        _write(path, new)
    elif path.is_symlink():  # the user's link (a dotfiles repository): it stays, its file emptied of kb
        _write(path, "{}\n" if fmt == "json" else "")
    else:
        path.unlink()
    return "removed"


def _refuse_foreign(path: Path, name: str, before: Any, in_block: bool = True) -> None:
    if before is not None and not (in_block and is_kb_server(before)):
        raise Conflict(
            f"{path} already has an MCP server named {name!r} that kb did not write; "
            "give another --name (nothing was written)"
        )


def _read(path: Path) -> str | None:
    if path.is_symlink() and not path.exists():
        raise BadInput(f"{path}: a broken symbolic link; nothing was written")
    if path.exists() and not path.is_file():
        raise BadInput(f"{path}: not a file; nothing was written")
    try:
        return path.read_text(encoding="utf-8") if path.exists() else None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc}); nothing was written") from None


def _json(path: Path, text: str | None) -> dict[str, Any]:
    if text is None or not text.strip():
        return {}
    data = json_input(text, str(path), "; nothing was written")
    if not isinstance(data, dict):
        raise BadInput(f"{path}: not a JSON object; nothing was written")
    return data


JSON_STYLES: tuple[dict[str, Any], ...] = (
    {"indent": 2},
    {"indent": 4},
    {"indent": "\t"},
    {},
    {"separators": (",", ":")},
)


def _dumps_like(data: dict[str, Any], original: str | None) -> str:
    """data in the layout the file had (indentation, separators, non-ASCII, final newline), when it is
    one json.dumps writes, so taking kb's entry out gives back the very bytes that were there; else
    2-space indentation, as the clients write these files."""
    if original and original.strip():
        parsed = json.loads(original)
        for style in JSON_STYLES:
            for ascii_only in (False, True):
                text = json.dumps(parsed, ensure_ascii=ascii_only, **style)
                if original.rstrip("\n") == text:
                    return json.dumps(data, ensure_ascii=ascii_only, **style) + original[len(text) :]
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def _toml(path: Path, text: str | None) -> dict[str, Any]:
    try:
        return toml_document(text or "")
    except Unparsable as exc:
        raise BadInput(f"{path}: not TOML ({exc}); nothing was written") from None


def _markers(name: str) -> tuple[str, str]:
    return (
        f"# >>> kb: mcp_servers.{name}, written by `kb agent install` (`kb agent uninstall` removes it)",
        f"# <<< kb: mcp_servers.{name}",
    )


def _block(text: str | None, name: str) -> re.Match[str] | None:
    begin, end = _markers(name)
    return re.search(rf"\n*^{re.escape(begin)}\n.*?^{re.escape(end)}\n?", text or "", re.M | re.S)


def _without_block(text: str | None, name: str) -> str:
    """text without kb's block; a table someone put between its markers is theirs and stays where it was.
    Refused when the rest would not read back as everything but kb's server."""
    found = _block(text, name)
    if text is None or found is None:
        return text or ""
    before, after = text[: found.start()], text[found.end() :]
    kept = _foreign_tables(found.group(0), name)
    if kept:
        before = (before.rstrip("\n") + "\n\n" if before.strip() else "") + kept
    rest = before + ("\n" if before and after else "") + after
    rest = rest if not rest.strip() else rest if rest.endswith("\n") else rest + "\n"
    expected = tomllib.loads(text)
    servers = expected.get("mcp_servers", {})
    servers.pop(name, None)
    if not servers:
        expected.pop("mcp_servers", None)
    try:
        same = tomllib.loads(rest) == expected
    except tomllib.TOMLDecodeError:
        same = False
    if not same:
        raise BadInput(
            f"kb's block [mcp_servers.{name}] holds more than kb wrote, in a way kb cannot take apart; "
            "move your own settings out of it (between its # >>> and # <<< lines); nothing was written"
        )
    return rest


def _foreign_tables(block: str, name: str) -> str:
    """The tables in kb's block that are not kb's server [mcp_servers.NAME] (or its sub-tables), as written."""
    kept: list[str] = []
    keep = False
    for line in block.strip("\n").splitlines()[1:-1]:  # between the markers
        keys = _header_keys(line)
        if keys:
            keep = keys[:2] != ("mcp_servers", name)
        if keep:
            kept.append(line)
    return "\n".join(kept).strip("\n") + "\n" if any(line.strip() for line in kept) else ""


def _header_keys(line: str) -> tuple[str, ...]:
    """The keys a TOML table header names ([a.b], [[a.b]], ["a".b]); () for any other line."""
    if not line.lstrip().startswith("["):
        return ()
    try:
        data: Any = tomllib.loads(line + "\n")
    except tomllib.TOMLDecodeError:
        return ()  # a line of a multi-line array, say
    keys: list[str] = []
    while isinstance(data, (dict, list)) and data:
        if isinstance(data, list):
            data = data[-1]
            continue
        if len(data) != 1:
            return ()
        ((key, data),) = data.items()
        keys.append(key)
    return tuple(keys)


def _toml_block(name: str, entry: dict[str, Any]) -> str:
    begin, end = _markers(name)
    key = name if BARE_KEY.fullmatch(name) else json.dumps(name)
    # JSON strings and arrays of them are TOML basic strings and arrays
    lines = [f"{k} = {json.dumps(v, ensure_ascii=True)}" for k, v in entry.items() if not isinstance(v, dict)]
    tables = [(k, v) for k, v in entry.items() if isinstance(v, dict)]
    text = "\n".join([begin, f"[mcp_servers.{key}]", *lines])
    for table, values in tables:
        text += f"\n[mcp_servers.{key}.{table}]\n" + "\n".join(
            f"{json.dumps(k)} = {json.dumps(v, ensure_ascii=True)}" for k, v in values.items()
        )
    return f"{text}\n{end}\n"


def _write(path: Path, text: str) -> None:
    # a configuration file that is a link (~/.claude.json -> a dotfiles repository) is the user's: the
    # file it points to, the one kb read, gets the change, and the link stays a link
    path = Path(os.path.realpath(path)) if path.is_symlink() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.kb-{os.getpid()}")
    staging.write_text(text, encoding="utf-8")
    if path.exists():
        os.chmod(staging, path.stat().st_mode & 0o7777)  # ~/.claude.json is private: it stays so
    os.replace(staging, path)


# Claude Code's and Codex's events, then Cursor's (camelCase)
HOOK_EVENTS = ("SessionStart", "Stop", "sessionStart", "stop")


def _runs_kb_hook(command: Any) -> bool:
    """Whether a command runs `kb ... hook session-start|stop [--cursor]`."""
    try:
        words = shlex.split(str(command))
    except ValueError:
        return False
    runs_kb = bool(words) and (Path(words[0]).name == "kb" or "kbtool" in words)
    events = [words[i + 1] for i, word in enumerate(words[:-1]) if word == "hook"]
    if not (runs_kb and events and events[-1] in ("session-start", "stop")):
        return False
    return words[-1] in (events[-1], "--cursor")


def is_kb_hook_group(group: Any) -> bool:
    """Whether a hook entry is kb's (written by `kb agent install --hooks`): a Claude Code or Codex matcher
    group every hook of which runs `kb ... hook session-start|stop`, or a Cursor entry whose command does."""
    if isinstance(group, dict) and "hooks" not in group and "command" in group:  # Cursor's flat entry
        return _runs_kb_hook(group["command"])
    hooks = group.get("hooks") if isinstance(group, dict) else None
    if not isinstance(hooks, list) or not hooks:
        return False
    return all(isinstance(hook, dict) and _runs_kb_hook(hook.get("command", "")) for hook in hooks)


def put_hooks(path: Path, groups: dict[str, dict[str, Any]], file_keys: dict[str, Any] | None = None) -> str:
    """kb's hook group for each event in the client's hooks file, replacing kb's earlier one and keeping
    everyone else's: 'added', 'updated' or 'unchanged'. file_keys: top-level keys the file must hold (Cursor's
    version), kept as they are when the file has them."""
    old = _read(path)
    data = _json(path, old)
    for key, value in (file_keys or {}).items():
        data.setdefault(key, value)
    hooks = data.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadInput(f"{path}: hooks is not an object; nothing was written")
    before = {event: [g for g in hooks.get(event) or [] if is_kb_hook_group(g)] for event in groups}
    if all(before[event] == [group] for event, group in groups.items()):
        return "unchanged"
    for event, group in groups.items():
        listed = hooks.get(event) or []
        if not isinstance(listed, list):
            raise BadInput(f"{path}: hooks.{event} is not a list; nothing was written")
        hooks[event] = [g for g in listed if not is_kb_hook_group(g)] + [group]
    _write(path, _dumps_like(data, old))
    return "updated" if any(before.values()) else "added"


def drop_hooks(path: Path, file_keys: dict[str, Any] | None = None) -> str:
    """kb's hook groups taken out of the hooks file: 'removed' or 'absent'; an event, the hooks object or the
    file left holding nothing (but the file_keys put_hooks added) is removed too, so the file is as it was
    before install."""
    old = _read(path)
    if old is None:
        return "absent"
    data = _json(path, old)
    hooks = data.get("hooks")
    if not isinstance(hooks, dict) or not any(
        is_kb_hook_group(g) for event in HOOK_EVENTS for g in (hooks.get(event) or [])
    ):
        return "absent"
    for event in HOOK_EVENTS:
        kept = [g for g in hooks.get(event) or [] if not is_kb_hook_group(g)]
        if kept:
            hooks[event] = kept
        else:
            hooks.pop(event, None)
    if not hooks:
        del data["hooks"]
    if data and data != (file_keys or {}):
        _write(path, _dumps_like(data, old))
    else:
        path.unlink()
    return "removed"
