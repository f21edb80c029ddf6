"""The one exception tree of kbtool.

    KbError                  base class; callers catch this one
    ├── BadInput             exit code 2: the request itself is wrong, nothing was written
    │   ├── InvalidCard      a card (file, flags or JSON) fails its schema
    │   ├── InvalidField     a --field / --where key or value the model does not accept
    │   ├── UnknownKind      a kind that is not one of KINDS
    │   ├── CardNotFound     no card has this id (or prefix)
    │   ├── AmbiguousId      a prefix that matches more than one card
    │   ├── SkillNotFound    no skill has this name
    │   ├── Conflict         an id that already exists, a locked gate, ...
    │   │   └── Changed      a card changed since the version a change was made against
    │   ├── OutsidePath      a path that escapes the knowledge base
    │   ├── NotAKnowledgeBase  no kb.toml where one was expected
    │   ├── ReadOnly         a write to a knowledge base this process may not write (a read-only mount)
    │   └── SemanticUnavailable  the embedding model's packages are not installed (the `semantic` extra)
    └── CheckFailed          exit code 1: the command ran and a check it performs failed

The CLI maps `exit_code` to the process exit status and prints `str(error)` as one line (one_line).
"""

from __future__ import annotations

import re


class KbError(Exception):
    exit_code = 2


class BadInput(KbError):
    exit_code = 2


class InvalidCard(BadInput):
    pass


class InvalidField(BadInput):
    pass


class UnknownKind(BadInput):
    pass


class CardNotFound(BadInput):
    pass


class AmbiguousId(BadInput):
    pass


class SkillNotFound(BadInput):
    pass


class Conflict(BadInput):
    pass


class Changed(Conflict):
    """A change made against a card as it stood (a web form's version) when it has changed since."""


class OutsidePath(BadInput):
    pass


class NotAKnowledgeBase(BadInput):
    pass


class ReadOnly(BadInput):
    """Reading, searching and linting a read-only knowledge base work; writing it cannot."""


class SemanticUnavailable(BadInput):
    """The core install has no model; keyword search and every other command still work."""


class CheckFailed(KbError):
    exit_code = 1


MESSAGE_CHARS = 1_000  # an error longer than this is a value echoed whole (5,000 digits, a pasted file)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def one_line(message: str, fallback: str) -> str:
    """An error as a terminal shows it: one line (line breaks folded into spaces), no control character
    (an escape sequence or bidi override echoed from the input is shown as \\xNN), never empty
    (fallback: the error's kind), and never a screenful (the middle of a very long one left out)."""
    text = " ".join(part.strip() for part in message.splitlines() if part.strip())
    text = _CONTROL.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", text
    )
    if not text:
        return fallback
    if len(text) > MESSAGE_CHARS:
        cut = len(text) - MESSAGE_CHARS
        text = f"{text[: MESSAGE_CHARS * 2 // 3]} ... ({cut:,} characters left out) ... {text[-MESSAGE_CHARS // 3 :]}"
    return text


def command_failure(exc: Exception, debug: bool) -> tuple[str, int] | None:
    """The one line a `kb` command says on stderr for an exception that ended it, and its exit status: a library
    error's own message and exit code, a path the file system refused (2), else a bug in kb (1, its traceback
    kept for debug: KB_DEBUG). None: let it raise (debug, or an OSError naming no path, which is not kb's to
    explain). The CLI (kbtool/surfaces/cli/base.py) and `kb search`'s light path both say failures through this."""
    if isinstance(exc, KbError):
        return f"kb: error: {one_line(str(exc), type(exc).__name__)}", exc.exit_code
    if isinstance(exc, OSError):  # a name too long, a folder where a file goes
        if debug or exc.filename is None:
            return None
        where = f"{exc.filename} -> {exc.filename2}" if exc.filename2 is not None else str(exc.filename)
        return f"kb: error: {one_line(f'{where}: {exc.strerror or exc}', type(exc).__name__)}", 2
    if debug:
        return None
    said = one_line(f"{type(exc).__name__}: {exc}", type(exc).__name__)
    return f"kb: internal error: {said} (set KB_DEBUG=1 for the traceback)", 1
