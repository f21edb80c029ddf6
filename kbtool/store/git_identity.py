"""Who kb's commits and reviews are by: git's own identity, or kb's where git has none.

git's identity is user.name and user.email as git itself reads them, from every config file it honours
(GitPython's own reader misses some). Where git has none, kb signs its commits kb <kb@localhost> and says so
once (NO_IDENTITY), so the person can set theirs. A write or review with no git name is by the login name:
a fresh container has no git identity and often no $USER."""

from __future__ import annotations

import getpass
import os

import git

NO_IDENTITY = (
    "git has no user.name or user.email here, so kb signs its commits kb <kb@localhost>; say who you are with "
    'git config --global user.name "Your Name" and user.email'
)


def configured_identity(repo: git.Repo) -> dict[str, str]:
    """user.name and user.email as git itself reads them: every config file it honours (the repository's,
    GIT_CONFIG_GLOBAL or ~/.gitconfig, XDG, the system's, includes), which GitPython's own reader does not."""
    try:
        out = repo.git.config("--get-regexp", r"^user\.(name|email)$")
    except git.GitCommandError:  # exit 1: neither is set anywhere
        return {}
    found: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        if value.strip():
            found[key.split(".", 1)[1]] = value.strip()  # the last one git prints is the one it uses
    return found


def identity_env(repo: git.Repo) -> dict[str, str]:
    """Commits need an author; where git has none configured, kb signs as itself."""
    known = configured_identity(repo)
    env: dict[str, str] = {}
    if not os.environ.get("GIT_AUTHOR_NAME") and not known.get("name"):
        env["GIT_AUTHOR_NAME"] = env["GIT_COMMITTER_NAME"] = "kb"
    if not os.environ.get("GIT_AUTHOR_EMAIL") and not known.get("email"):
        env["GIT_AUTHOR_EMAIL"] = env["GIT_COMMITTER_EMAIL"] = "kb@localhost"
    return env


def author_name(repo: git.Repo) -> str | None:
    """Who a person's write or review is by: git's user.name, else the login name (a fresh container has
    no git identity and often no $USER; the account still has a name)."""
    name = os.environ.get("GIT_AUTHOR_NAME") or configured_identity(repo).get("name")
    if name:
        return str(name)
    try:
        return getpass.getuser() or None
    except (KeyError, OSError):  # no $USER and no passwd entry for this uid
        return None
