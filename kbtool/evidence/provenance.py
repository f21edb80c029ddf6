"""A run's provenance as it travels with a finding: repository, environment and artifacts.

A run's provenance, as it travels with a finding in a shared knowledge base: the experiment
repository (name, remote without credentials, HEAD, dirty), the machine's environment (python,
the packages that shape an inference result, the GPU), and artifact paths that mean something
on someone else's machine. The only I/O is asking git and nvidia-smi.
"""

from __future__ import annotations

import platform
import re
import shutil
import subprocess
from importlib import metadata
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput

PACKAGES = (
    "torch",
    "vllm",
    "sglang",
    "tensorrt-llm",
    "flashinfer-python",
    "transformers",
    "triton",
    "aiperf",
    "kbtool",
)


def repo_state(path: Path) -> dict[str, Any] | None:
    """The experiment repository at path as it travels with the KB: its name, remote URL (without
    credentials), HEAD and dirty flag. Never the machine path: cards are shared through git, and
    /home/someone/... means nothing (and tells too much) on anyone else's machine. None when path
    is not a git repository."""

    def git(*args: str, timeout: float = 10) -> str | None:
        try:
            out = subprocess.run(["git", "-C", str(path), *args], capture_output=True, text=True, timeout=timeout)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    head = git("rev-parse", "HEAD")
    if head is None:
        return None
    status = git("status", "--porcelain", "--untracked-files=no", timeout=30)
    remotes = (git("remote") or "").split()
    url = git("remote", "get-url", "origin" if "origin" in remotes else remotes[0]) if remotes else None
    top = git("rev-parse", "--show-toplevel")
    name = repo_name(url) if url else Path(top or path).resolve().name
    state: dict[str, Any] = {"name": name, "commit": head}
    if url:
        state["url"] = without_credentials(url)
    if status is not None:
        state["dirty"] = bool(status)
    return state


def require_repository(path: Path) -> None:
    """BadInput unless path is a folder inside a git work tree: a finding told to record an experiment
    repository must not be written without it because the path was mistyped."""
    if not path.is_dir():
        raise BadInput(f"{path}: no such folder (the experiment repository whose commit the finding records)")
    try:
        inside = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--is-inside-work-tree"], capture_output=True, text=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return
    if inside.returncode != 0:
        raise BadInput(f"{path}: not a git repository (the experiment repository whose commit the finding records)")


def portable_path(path: Path, repo: Path | None) -> str:
    """An artifact's path as it can travel in a shared KB: as given when relative, else relative to
    the experiment repository when inside it, else just the file's name (never /home/someone/...)."""
    if not path.is_absolute() and ".." not in path.parts:
        return path.as_posix()
    full = path.resolve()
    if repo is not None and full.is_relative_to(repo.resolve()):
        return full.relative_to(repo.resolve()).as_posix()
    return path.name


def without_credentials(url: str) -> str:
    """https://user:token@host/x.git -> https://host/x.git; scp-style git@host:x.git stays as it is."""
    return re.sub(r"^([a-z][a-z0-9+.-]*://)[^/@]*@", r"\1", url, flags=re.IGNORECASE)


def repo_name(url: str) -> str:
    """The repository's name from its remote URL: .../org/engine.git -> engine."""
    tail = re.split(r"[/:]", url.rstrip("/"))[-1]
    return tail.removesuffix(".git") or url


def environment() -> dict[str, str]:
    """Python, the versions of the packages that shape an inference result, and the GPU if any."""
    env = {"python": platform.python_version(), "platform": platform.platform(terse=True)}
    for name in PACKAGES:
        try:
            env[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    if shutil.which("nvidia-smi"):
        try:
            out = subprocess.run(
                ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                capture_output=True,
                text=True,
                timeout=15,
            )
            gpus = [line.split(",") for line in out.stdout.strip().splitlines() if "," in line]
            if out.returncode == 0 and gpus:
                env["gpu"] = gpus[0][0].strip() + (f" x{len(gpus)}" if len(gpus) > 1 else "")
                env["driver"] = gpus[0][1].strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return env
