"""What a gate's command reaches in the knowledge base, or why kb cannot tell.

A command reaches the paths of the knowledge base that it runs or reads, and a gate's lock covers their folders
(kbtool/curation/gate_lock.py).

A lock covers what a command runs only if kb sees it. "$KB_ROOT/gates/x.py" is one way to write it; a shell
has others: `cd "$KB_ROOT" && python3 gates/x.py` (also `cd $KB_ROOT;`, `${KB_ROOT}`, `pushd`), an absolute
path into the knowledge base, `PYTHONPATH=$KB_ROOT/gates`. So the command is read as shell words (shlex,
with the operators apart): a word holding $KB_ROOT or the knowledge base's absolute path names the path
that follows it; after a `cd` into the knowledge base, a relative word that is a file or folder there is
one too. What kb cannot follow is refused rather than guessed (a wrong lock is worse than none): a command
that mentions the knowledge base (KB_ROOT, or its path) and names no path of it, a program left to find
its own way in from KB_ROOT (`python3 -c '...os.environ["KB_ROOT"]...'`), a program run inside it that
names none (`make` reads a Makefile nobody named), Python's `-m` or `-c` there (the folder is then on
sys.path, and a json.py put there would be imported before the standard library's).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

KB_VARIABLE = re.compile(r"\$(?:KB_ROOT\b|\{KB_ROOT\})")
# where a path written in a word ends: a quote, a space, a shell operator, a separator of a path list
PATH_END = re.compile(r"[\s\"'`;|&<>()$\\:,]")
OPERATORS = {"&&", "||", ";", "|", "&", ";;", "|&", "\n"}
CHANGES_FOLDER = {"cd", "pushd"}
# commands that run no file of the folder they run in, so one after a `cd` into the knowledge base needs none
QUIET = {"echo", "printf", "true", "false", ":", "exit", "test", "[", "export", "set", "unset", "wait"}
PYTHON = re.compile(r"(^|/|\{)python[0-9.]*\}?$|KB_PYTHON")
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
PATH_CHAR = re.compile(r"[\w./~-]")  # a character a path spelled before the knowledge base's would end in


@dataclass(frozen=True)
class Reach:
    """The paths a command names in the knowledge base, from its root as written ("gates/x.py", "gates",
    "" for the root itself, "../x.py" for one that leaves it), and why kb cannot tell what it runs there
    (None when it can)."""

    paths: list[str]
    unclear: str | None = None


def command_reach(command: str | None, root: Path, exists: Callable[[str], bool] | None = None) -> Reach:
    """What command reaches in the knowledge base at root (see the module). exists(rel) says whether a path
    is there (default: on disk); an export's import passes its own."""
    if not command:
        return Reach([])
    there = exists or (lambda rel: (root / rel).exists())
    spellings = sorted({str(root), str(root.resolve())}, key=len, reverse=True)
    try:
        words = _words(command)
    except ValueError as exc:
        mentions = "KB_ROOT" in command or any(s in command for s in spellings)
        return Reach([], f"kb cannot read it as shell words ({exc})" if mentions else None)
    reader = _Reader(spellings, there)
    for simple in _commands(words):
        reader.read(simple)
    paths = list(dict.fromkeys(reader.paths))
    unclear = reader.unclear
    if unclear is None and (reader.mentioned or "KB_ROOT" in command) and not paths:
        unclear = "it mentions the knowledge base but names no file of it"
    return Reach(paths, unclear)


def _words(command: str) -> list[str]:
    """The command as shell words, each operator a word of its own, a line end an operator, comments kept
    (a path named in a comment is locked too: more locked is never less safe)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars="();<>|&\n")
    lexer.whitespace = " \t\r"
    lexer.whitespace_split = True
    lexer.commenters = ""
    return list(lexer)


def _commands(words: list[str]) -> list[list[str]]:
    """Simple commands, with "(" and ")" kept as commands of their own (a subshell's `cd` ends with it)."""
    out: list[list[str]] = []
    current: list[str] = []
    for word in words:
        if word in OPERATORS or word in ("(", ")"):
            if current:
                out.append(current)
            current = []
            if word in ("(", ")"):
                out.append([word])
        else:
            current.append(word)
    if current:
        out.append(current)
    return out


class _Reader:
    """Reads simple commands in order, following the folder they run in (None: the project's, or
    somewhere kb does not follow; a path from the knowledge base's root: inside it)."""

    def __init__(self, spellings: list[str], exists: Callable[[str], bool]):
        self.spellings = spellings
        self.exists = exists
        self.folder: str | None = None
        self.saved: list[str | None] = []  # the folders "(" and pushd left
        self.paths: list[str] = []
        self.unclear: str | None = None
        self.mentioned = False

    def read(self, words: list[str]) -> None:
        if words in (["("], [")"]):
            self._enter_or_leave(words[0])
            return
        lead = next((i for i, w in enumerate(words) if not ASSIGNMENT.match(w)), len(words))
        self.paths += [p for w in words[:lead] for p in self._kb_paths(w)]  # PYTHONPATH=$KB_ROOT/gates
        rest = words[lead:]
        if not rest:
            return
        program = rest[0]
        if program in CHANGES_FOLDER or program == "popd":
            self._change_folder(program, rest[1:])
            return
        named = [p for w in rest for p in self._kb_paths(w)]
        self.paths += named
        if not named and any("KB_ROOT" in w for w in rest):  # os.environ["KB_ROOT"] in code: not followed
            self._cannot(f"`{program.rsplit('/', 1)[-1]}` reads KB_ROOT, and kb cannot tell which file it runs there")
        if self.folder is None:
            return
        relative = [p for w in rest for p in self._relative(w)]
        self.paths += relative
        name = program.rsplit("/", 1)[-1]
        if PYTHON.search(program) and _python_runs_code(rest[1:]):
            self._cannot(f"`{name} -m` or `-c` runs with a folder of the knowledge base on sys.path")
        elif not named and not relative and name not in QUIET:
            self._cannot(f"kb cannot tell which file of the knowledge base `{name}` runs")

    def _enter_or_leave(self, paren: str) -> None:
        if paren == "(":
            self.saved.append(self.folder)
        else:
            self.folder = self.saved.pop() if self.saved else None

    def _change_folder(self, program: str, args: list[str]) -> None:
        if program == "popd":
            self.folder = self.saved.pop() if self.saved else None
            return
        if program == "pushd":
            self.saved.append(self.folder)
        self.folder = self._folder_after(args)

    def _cannot(self, why: str) -> None:
        if self.unclear is None:
            self.unclear = why

    def _kb_paths(self, word: str) -> list[str]:
        """The paths of the knowledge base a word names through $KB_ROOT or its absolute path."""
        found = [_path_after(word, match.end()) for match in KB_VARIABLE.finditer(word)]
        for spelling in self.spellings:
            for match in re.finditer(re.escape(spelling), word):
                before, after = word[match.start() - 1 : match.start()], word[match.end() : match.end() + 1]
                if not PATH_CHAR.match(before) and (after in ("", "/") or PATH_END.match(after)):
                    found.append(_path_after(word, match.end()))
        self.mentioned = self.mentioned or bool(found)
        return list(dict.fromkeys(found))

    def _folder_after(self, args: list[str]) -> str | None:
        """Where `cd ARGS` goes, as a path from the knowledge base's root, or None when not into it."""
        target = next((a for a in args if not a.startswith("-")), None)
        if target is None:
            return None
        inside = self._kb_paths(target)
        if inside:
            if _outside(inside[0]):  # relative paths from there may lead back in, unseen
                self._cannot("it changes into a folder outside the knowledge base by way of it")
                return None
            return inside[0]
        if target.startswith(("/", "~")) or "$" in target or self.folder is None:
            return None
        folder = _joined(self.folder, target)
        return None if _outside(folder) else folder

    def _relative(self, word: str) -> list[str]:
        """A relative word that is a path in the folder the command runs in (an option's value too)."""
        if self.folder is None or "$" in word or "`" in word:
            return []
        candidates = [word, word.split("=", 1)[1]] if "=" in word else [word]
        out = []
        for candidate in candidates:
            if not candidate or candidate.startswith(("-", "/", "~")) or "://" in candidate:
                continue
            rel = _joined(self.folder, candidate)
            if _outside(rel):
                continue
            if self.exists(rel) or "/" in candidate:  # written as a path and missing: named, the lock refuses it
                out.append(rel)
        return out


def _path_after(word: str, at: int) -> str:
    """The path from the knowledge base's root that a word names after a mention ending at `at`: "" for
    the root itself, normalized ("gates/../x" is "x", "../x" stays outside)."""
    rest = word[at:]
    end = PATH_END.search(rest)
    written = rest[: end.start()] if end else rest
    return _normal(written.lstrip("/")) if written.strip("/") else ""


def _normal(rel: str) -> str:
    """A path from the root, without . and .. where they can go ("" for the root itself)."""
    normal = os.path.normpath(rel).replace(os.sep, "/") if rel else ""
    return "" if normal == "." else normal


def _joined(folder: str, rel: str) -> str:
    return _normal(f"{folder}/{rel}" if folder else rel)


def _outside(rel: str) -> bool:
    return rel == ".." or rel.startswith("../")


def _python_runs_code(args: list[str]) -> bool:
    """Whether Python's options (those before its script) hold -m or -c (alone or in a cluster, -Bc), which
    put the folder it runs in on sys.path."""
    words = iter(args)
    for arg in words:
        if arg in ("-", "--") or not arg.startswith("-"):
            return False
        if arg.startswith("--"):
            if arg == "--check-hash-based-pycs":
                next(words, None)
            continue
        for at, letter in enumerate(arg[1:], 1):
            if letter in "mc":
                return True
            if letter in "WX":  # an option with a value: the rest of the word, or the next word
                if at == len(arg) - 1:
                    next(words, None)
                break
    return False
