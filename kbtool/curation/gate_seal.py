"""The seal that shows a gate's run record was written by kb here, not by hand or elsewhere.

The seal on a gate's run record: what makes a line of runs/gates/<id>.jsonl one that kb wrote here, after
computing the verdict itself, rather than one appended by hand, carried in by an import or a sync, or made on
another machine.

A seal is an HMAC-SHA256 of the record (its canonical JSON), the gate's id and the knowledge base's folder,
under a key of this user's that lives outside every repository ($KB_CONFIG_DIR, else ~/.config/kbtool,
mode 0600, made on the first run that records). A line without a valid seal never makes a gate met.

The limit, said plainly: the key is a file of the user kb runs as. An agent running as that same user can
read it and seal a record of its own; the seal then stops only what an agent does without reaching for the
key (a line appended by hand, an edited verdict, a record in an imported file). To close that too, keep the
key where the agent cannot read it (another user, a container without that folder).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
from pathlib import Path
from typing import Any

from kbtool.store.locate import config_dir

KEY_FILE = "gate-seal.key"
SEAL = "seal"  # the record's key that holds it


def key_path() -> Path:
    return config_dir() / KEY_FILE


def _key(create: bool) -> bytes | None:
    """This user's key; made on first use when create (a folder of mode 0700, a file of mode 0600, written
    once: O_EXCL, so two kb processes never make two keys). None when there is none and create is off, or
    when the file holds no key (nothing verifies then; a new run says so when it cannot seal)."""
    path = key_path()
    if create and not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another kb made it a moment ago: read that one
        else:
            with os.fdopen(fd, "w") as handle:
                handle.write(secrets.token_hex(32) + "\n")
    try:
        text = path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    try:
        return bytes.fromhex(text) if len(text) == 64 else None
    except ValueError:
        return None


def _digest(key: bytes, record: dict[str, Any], gate_id: str, kb_root: Path) -> str:
    body = {k: v for k, v in record.items() if k != SEAL}
    message = json.dumps(
        {"kb": str(kb_root.resolve()), "gate": gate_id, "record": body},
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hmac.new(key, message.encode("utf-8"), hashlib.sha256).hexdigest()


def seal(record: dict[str, Any], gate_id: str, kb_root: Path) -> dict[str, Any]:
    """The record with its seal. OSError when the key can be neither read nor made."""
    key = _key(create=True)
    if key is None:
        raise OSError(f"{key_path()} holds no key kb can use; remove it and run the gate again")
    return {**record, SEAL: _digest(key, record, gate_id, kb_root)}


def _newest_note(gate_id: str, kb_root: Path) -> Path:
    """Where kb notes the seal of the newest record it wrote for a gate of a knowledge base: beside the key,
    one small file per (knowledge base, gate), so two kb processes never write one file."""
    name = hashlib.sha256(f"{kb_root.resolve()}\0{gate_id}".encode()).hexdigest()[:32]
    return config_dir() / "gate-runs" / name


def remember_newest(sealed: dict[str, Any], gate_id: str, kb_root: Path) -> None:
    """Note the seal of the record kb just committed: a later reader can tell when the newest record kb
    made was taken out of the log (a failing run deleted to leave an older pass standing)."""
    note = _newest_note(gate_id, kb_root)
    note.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    scratch = note.with_suffix(f".{os.getpid()}")
    scratch.write_text(str(sealed[SEAL]) + "\n", encoding="ascii")
    os.replace(scratch, note)


def newest_made(gate_id: str, kb_root: Path) -> str | None:
    """The seal of the newest record kb wrote for this gate here, if kb noted one."""
    try:
        return _newest_note(gate_id, kb_root).read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def is_sealed(record: dict[str, Any], gate_id: str, kb_root: Path) -> bool:
    """Whether kb wrote this record here: its seal is this user's, for this gate in this knowledge base."""
    given = record.get(SEAL)
    if not isinstance(given, str):
        return False
    key = _key(create=False)
    return key is not None and hmac.compare_digest(given, _digest(key, record, gate_id, kb_root))
