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

The CLI maps `exit_code` to the process exit status and prints `str(error)` as one line.
"""

from __future__ import annotations


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
