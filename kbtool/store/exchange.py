"""A knowledge base as JSON Lines: one typed record a line, for export and import.

`kb export --format jsonl` writes it and `kb import FILE.jsonl` reads it: a header first ({"type": "header",
"format": "kb", "version": 2, "kb": NAME, "left": [what the export could not carry]}), then

- card: {"type": "card", "card": {frontmatter fields}, "body": "markdown"} (with "applies" when the export was
  for an environment), in path order; lossless both ways: a card read back renders to the very text it
  was exported from (dates travel as ISO strings and are read back as dates);
- lock: {"type": "lock", "gate": ID, "sha256": ..., "files": {path: sha256}}, a gate's kb.lock entry;
- file: {"type": "file", "path": ..., "text" or "base64": ...}, a file of the knowledge base a locked gate's
  command runs ($KB_ROOT/PATH, under gates/);
- skill-file: {"type": "skill-file", "path": "skills/NAME/...", "text" or "base64": ...}, every file of a skill;
- config: {"type": "config", "text": ...}, kb.toml without its [[sources]] that name a folder on this machine.

A gate-runs record ({"type": "gate-runs", "gate": ID, "text": ...}, a gate's run log) is what exports made
before run logs stopped travelling hold: it still reads, and an import leaves it out.

An export of version 1 (cards only, `{"card": ..., "body": ...}` without a type) still reads. This module
checks what a stream says on its own (types, paths, that each lock's gate is in it); the facade checks
the locks against their gates and files (kbtool.facade.exchange)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import PurePosixPath
from typing import Any

from kbtool.model import markdown
from kbtool.model.cards import CardBase
from kbtool.model.errors import BadInput, KbError
from kbtool.model.parsing import Unparsable, json_input, toml_document
from kbtool.model.records import StoredCard
from kbtool.model.validation import validate_card

FORMATS = ("jsonl",)
VERSION = 2
RECORD_KEYS = {
    "header": ({"format", "version", "kb", "left"}, set()),
    "card": ({"card"}, {"body", "applies"}),
    "lock": ({"gate", "sha256"}, {"files"}),
    "file": ({"path"}, {"text", "base64"}),
    "gate-runs": ({"gate", "text"}, set()),
    "skill-file": ({"path"}, {"text", "base64"}),
    "config": ({"text"}, set()),
}


def _iso(value: Any) -> str:
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON")


def _line(record: dict[str, Any]) -> str:
    return json.dumps(record, ensure_ascii=False, default=_iso)


def header_line(name: str, left: list[str]) -> str:
    return _line({"type": "header", "format": "kb", "version": VERSION, "kb": name, "left": left})


def export_lines(cards: Iterable[StoredCard], applies: dict[str, str] | None = None) -> Iterator[str]:
    """One line a card, in the order given; with applies (id -> how it applies to the environment the
    export is for), each line says so beside the card (an import reads past it)."""
    for stored in cards:
        record: dict[str, Any] = {"type": "card", "card": markdown.card_data(stored.card), "body": stored.body}
        if applies and stored.id in applies:
            record["applies"] = applies[stored.id]
        yield _line(record)


def lock_line(gate_id: str, sha256: str, files: dict[str, str]) -> str:
    return _line({"type": "lock", "gate": gate_id, "sha256": sha256, "files": dict(sorted(files.items()))})


def file_line(kind: str, path: str, data: bytes) -> str:
    """A file as text when it is UTF-8, else as base64: either way the very bytes come back."""
    try:
        return _line({"type": kind, "path": path, "text": data.decode("utf-8")})
    except UnicodeDecodeError:
        return _line({"type": kind, "path": path, "base64": base64.b64encode(data).decode("ascii")})


def config_line(text: str) -> str:
    return _line({"type": "config", "text": text})


def without_folder_sources(text: str) -> tuple[str, list[str]]:
    """kb.toml's text without each [[sources]] table that reads a folder (`path`: one machine's), and what
    was taken out, said; a git source (`url`) stays. The tables go line by line, so the rest keeps its
    comments and order; when the result would not read as the same settings less those sources, None
    stands for kb.toml itself (nothing of it is carried, and that is said)."""
    sources = toml_document(text).get("sources") or []
    local = [s for s in sources if isinstance(s, dict) and "path" in s and "url" not in s]
    if not local:
        return text, []
    kept: list[str] = []
    tables = iter(sources)
    dropping = False
    for line in text.splitlines(keepends=True):
        if re.match(r"\s*\[", line):
            dropping = bool(re.match(r"\s*\[\[\s*sources\s*\]\]", line)) and next(tables, None) in local
        if not dropping:
            kept.append(line)
    out = "".join(kept)
    said = [f"[[sources]] {s.get('name')!r}: a folder on this machine ({s['path']}); left out" for s in local]
    expected = {**toml_document(text), "sources": [s for s in sources if s not in local]}
    if not expected["sources"]:
        del expected["sources"]
    try:
        same = toml_document(out) == expected
    except Unparsable:
        same = False
    if not same:
        raise BadInput("kb.toml: its folder [[sources]] could not be taken out line by line; nothing exported")
    return out, said


KB_TABLE = re.compile(r"\s*\[\s*kb\s*\]\s*(?:#.*)?$")
TABLE = re.compile(r"\s*\[")


def _kb_table(lines: list[str]) -> tuple[int, int] | None:
    """Where kb.toml's [kb] table is among its lines: (its header's index, the next table's), or None."""
    start = next((i for i, line in enumerate(lines) if KB_TABLE.match(line)), None)
    if start is None:
        return None
    return start, next((i for i in range(start + 1, len(lines)) if TABLE.match(lines[i])), len(lines))


def with_identity_of(text: str, mine: str) -> str | None:
    """text (an export's kb.toml) with its [kb] table, the identity of the knowledge base it came from, replaced
    by mine's, line by line so the rest keeps its comments and order; None when the result would not read as
    text's settings under mine's [kb] (a [kb] written as dotted keys, say)."""
    lines, own = text.splitlines(keepends=True), mine.splitlines(keepends=True)
    theirs, ours = _kb_table(lines), _kb_table(own)
    block = own[ours[0] : ours[1]] if ours else []
    if block and not block[-1].endswith("\n"):
        block[-1] += "\n"
    out = "".join(lines[: theirs[0]] + block + lines[theirs[1] :] if theirs else block + lines)
    try:
        expected = {**toml_document(text), "kb": toml_document(mine).get("kb")}
        same = toml_document(out) == {k: v for k, v in expected.items() if v is not None}
    except Unparsable:
        same = False
    return out if same else None


@dataclass
class Stream:
    """What an export holds, each record checked on its own; files hold bytes, paths from the root."""

    cards: list[tuple[CardBase, str]] = field(default_factory=list)
    locks: dict[str, tuple[str, dict[str, str]]] = field(default_factory=dict)  # gate: (sha256, {path: sha256})
    files: dict[str, bytes] = field(default_factory=dict)  # the files gates run
    runs: dict[str, str] = field(default_factory=dict)  # gate: its run log's text
    skill_files: dict[str, bytes] = field(default_factory=dict)
    config: str | None = None
    left: list[str] = field(default_factory=list)  # what the export said it left out


def _safe_path(path: Any, where: str, under: str | None = None) -> str:
    """A relative path inside the knowledge base, in POSIX form; under: the folder it must be in."""
    if not isinstance(path, str) or not path:
        raise BadInput(f"{where}: path is not text")
    parts = PurePosixPath(path).parts
    escapes = path.startswith("/") or "\\" in path or any(p in ("..", ".", "") for p in path.split("/"))
    if escapes or parts[0] == ".kb":
        raise BadInput(f"{where}: path {path!r} is outside " + (f"{under}/" if under else "the knowledge base"))
    if any(p.lower() == ".git" for p in parts):  # at any depth: a repository inside runs its hooks too
        raise BadInput(f"{where}: path {path!r} is in a .git folder, git's own; nothing arrives there")
    if under is not None and (parts[0] != under or len(parts) < 3):
        raise BadInput(f"{where}: path {path!r} is outside {under}/ (a skill's file is {under}/NAME/FILE)")
    hidden = next((p for p in parts if p.startswith(".")), None)
    if under is not None and hidden is not None:
        raise BadInput(f"{where}: path {path!r}: {hidden} is hidden, and kb skill import takes no hidden file")
    return path


def _content(record: dict[str, Any], where: str) -> bytes:
    if isinstance(record.get("text"), str) and "base64" not in record:
        return str(record["text"]).encode("utf-8")
    if isinstance(record.get("base64"), str) and "text" not in record:
        try:
            return base64.b64decode(record["base64"], validate=True)
        except (binascii.Error, ValueError):
            raise BadInput(f"{where}: base64 that does not decode") from None
    raise BadInput(f"{where}: a file record holds either text or base64")


def _record(line: str, where: str) -> tuple[str, dict[str, Any]]:
    """A line's type and record, its keys checked; a line without a type is a version 1 card."""
    record = json_input(line, where)
    if not isinstance(record, dict):
        raise BadInput(f'{where}: expected a record {{"type": ..., ...}}')
    kind = record.pop("type", "card")
    if kind not in RECORD_KEYS:
        raise BadInput(f"{where}: unknown record type {kind!r}; a line is one of {', '.join(RECORD_KEYS)}")
    needed, optional = RECORD_KEYS[kind]
    if kind == "card" and not isinstance(record.get("card"), dict):
        raise BadInput(f'{where}: expected {{"card": {{...}}, "body": "..."}}')
    missing, extra = needed - set(record), set(record) - needed - optional
    if missing:
        raise BadInput(f"{where}: a {kind} record without {sorted(missing)[0]!r}")
    if extra:
        raise BadInput(f"{where}: unknown key {sorted(extra)[0]!r} in a {kind} record")
    return str(kind), record


def _header(record: dict[str, Any], where: str, stream: Stream) -> None:
    if record["format"] != "kb" or not isinstance(record["version"], int):
        raise BadInput(f'{where}: not a kb export header (format "kb" and a version)')
    if record["version"] > VERSION:
        raise BadInput(f"{where}: an export of format version {record['version']}; this kb reads up to {VERSION}")
    stream.left = [str(x) for x in record["left"]] if isinstance(record["left"], list) else []


def _card(record: dict[str, Any], where: str, seen: dict[str, str], stream: Stream) -> None:
    body = record.get("body", "")
    if not isinstance(body, str):
        raise BadInput(f"{where}: body is not text")
    try:
        card = validate_card(record["card"], where, from_json=True)
    except KbError as exc:
        raise BadInput(str(exc)) from None
    if card.id in seen:
        raise BadInput(f"{where}: card {card.id!r} again (first on line {seen[card.id].rsplit(':', 1)[1]})")
    seen[card.id] = where
    stream.cards.append((card, body))


def _lock(record: dict[str, Any], where: str, stream: Stream) -> None:
    gate, sha, files = record["gate"], record["sha256"], record.get("files") or {}
    if not isinstance(gate, str) or not isinstance(sha, str) or not isinstance(files, dict):
        raise BadInput(f"{where}: a lock is a gate id, its sha256 and {{path: sha256}}")
    if gate in stream.locks:
        raise BadInput(f"{where}: a second lock for gate {gate!r}")
    stream.locks[gate] = (sha, {_safe_path(p, where): str(h) for p, h in files.items()})


def _one(kind: str, record: dict[str, Any], where: str, seen: dict[str, str], stream: Stream) -> None:
    if kind == "card":
        _card(record, where, seen, stream)
    elif kind == "lock":
        _lock(record, where, stream)
    elif kind in ("file", "skill-file"):
        path = _safe_path(record["path"], where, "skills" if kind == "skill-file" else None)
        into = stream.files if kind == "file" else stream.skill_files
        if path in into:
            raise BadInput(f"{where}: {path} again")
        into[path] = _content(record, where)
    elif kind == "gate-runs":
        if not isinstance(record["gate"], str) or not isinstance(record["text"], str):
            raise BadInput(f"{where}: a run log is a gate id and its text")
        stream.runs[record["gate"]] = record["text"]
    elif kind == "config":
        if not isinstance(record["text"], str) or stream.config is not None:
            raise BadInput(f"{where}: kb.toml is one text, once")
        stream.config = record["text"]
    else:
        raise BadInput(f"{where}: the header must be the first line")


def _whole(stream: Stream, origin: str) -> None:
    """What holds across records: each lock's and each run log's gate is in the stream."""
    gates = {card.id for card, _ in stream.cards if card.kind == "gate"}
    for what, gate in [("lock", g) for g in stream.locks] + [("run log", g) for g in stream.runs]:
        if gate not in gates:
            raise BadInput(f"{origin}: a {what} for gate {gate!r}, which is not in the export")


def read_stream(text: str, origin: str, max_bytes: int) -> Stream:
    """Every record of an export, each checked; BadInput names the first bad line (nothing is kept)."""
    if len(text.encode()) > max_bytes:
        raise BadInput(f"{origin}: over the import limit of {max_bytes:,} bytes (kb.toml [limits] import_bytes)")
    stream = Stream()
    seen: dict[str, str] = {}
    first = True
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        where = f"{origin}:{number}"
        kind, record = _record(line, where)
        if kind == "header" and first:
            _header(record, where, stream)
        else:
            _one(kind, record, where, seen, stream)
        first = False
    _whole(stream, origin)
    return stream
