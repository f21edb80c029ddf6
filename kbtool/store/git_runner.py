"""The one way kb runs git for a repository someone else names.

Such a repository is a source in kb.toml, `kb import --from-kb`, `kb new-project --from` or `kb skill
install`. Every git kb runs for one gets the same environment (no password prompt, which would wait for ever;
only the protocols kbtool/store/git_urls.py allows; git's messages in English, which kb quotes in its own
sentences), a time limit (600 s: a large clone over a slow link, not a remote that never answers), and
git's reason for a failure in one line.

kb's own store is driven through GitPython (kbtool/store/repository.py); its failures are put into one
line by git_reason here too, so both ways say the same thing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Literal

import git

from kbtool.model.errors import BadInput
from kbtool.store.git_urls import PROTOCOLS

# what every git kb runs for a remote gets: no prompt for a password (it would wait for ever), only PROTOCOLS
GIT_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "",
    "SSH_ASKPASS": "",
    "GIT_ALLOW_PROTOCOL": ":".join(PROTOCOLS),
}
# git's messages in English, as GitPython asks for them: kb quotes them in its own English sentences
_MESSAGES_IN_ENGLISH = {"LANGUAGE": "C", "LC_ALL": "C"}
TIMEOUT = 600  # seconds: a clone of a large repository over a slow link, not a remote that never answers
CloneKind = Literal["checkout", "no-checkout", "bare", "shallow"]
_CLONE_OPTIONS: dict[str, tuple[str, ...]] = {
    "checkout": (),
    "no-checkout": ("--no-checkout",),  # the caller checks out the commit it resolved
    "bare": ("--bare",),  # only its refs are read
    "shallow": ("--depth", "1"),  # only the newest commit is read
}


class GitFailed(BadInput):
    """A git command kb ran failed; the message is `git SUBCOMMAND: git's reason`."""


def git_env() -> dict[str, str]:
    """The environment of every git kb runs for a repository someone named."""
    return {**os.environ, **_MESSAGES_IN_ENGLISH, **GIT_ENV}


def run_git(*args: str, cwd: Path | None = None, timeout: float = TIMEOUT) -> str:
    """git ARGS in cwd, with git_env(); its output without the trailing newline. GitFailed when git fails
    or runs past timeout."""
    subcommand = next((arg for arg in args if not arg.startswith("-") and "=" not in arg), "")
    try:
        out = subprocess.run(
            ["git", *args], cwd=cwd, capture_output=True, text=True, env=git_env(), timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise GitFailed(f"git {subcommand}: no answer in {timeout:g}s") from None
    if out.returncode != 0:
        raise GitFailed(f"git {subcommand}: {stderr_reason(out.stderr, out.returncode)}")
    return out.stdout.strip()


def clone(source: str, into: Path, kind: CloneKind = "checkout") -> Path:
    """Clone source (a URL check_git_url passed, or a path) into the folder into; GitFailed when git cannot."""
    run_git("clone", "--quiet", *_CLONE_OPTIONS[kind], "--", source, str(into))
    return into


def stderr_reason(stderr: str, status: object) -> str:
    """git's reason in one line: its first fatal: or error: line, else its last words; never empty (GitPython
    quotes git's stderr, so a message ending in a newline ends in a line holding only the quote, and git ends
    some messages with a blank line)."""
    cleaned = (line.strip().removeprefix("stderr: ").strip("'").strip() for line in stderr.splitlines())
    lines = [line for line in cleaned if line]
    reasons = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return reasons[0] if reasons else lines[-1] if lines else f"exit status {status}"


def git_reason(exc: git.GitCommandError) -> str:
    """A GitPython failure's reason in one line (stderr_reason)."""
    return stderr_reason(str(exc.stderr or ""), exc.status)
