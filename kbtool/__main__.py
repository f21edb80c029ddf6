"""The `kb` command and `python -m kbtool`: the CLI, with a Ctrl-C during start-up ended cleanly.

`python -m kbtool` and the `kb` command (pyproject's entry point): the CLI, entered so that a Ctrl-C while its
modules load (most of its first second, before the CLI's own handlers are in place) ends it as one during a
command does: one line, exit 130 (kbtool/store/interrupts.py), not a KeyboardInterrupt traceback. A plain
`kb search` is answered without loading the CLI (kbtool/surfaces/daemon/search_command.py): the command an agent
runs most, in a new process each time."""

from __future__ import annotations

import os
import sys
from typing import Any

_interrupted: list[bool] = []  # a Ctrl-C before the CLI's handlers were in place (they record the later ones)


def main() -> None:
    if not os.environ.get("KB_DEBUG"):
        sys.unraisablehook = _said_in_one_line
    try:
        from kbtool.surfaces.daemon.search_command import run

        status = run(sys.argv[1:])
        if status is not None:
            raise SystemExit(status)
        from kbtool.surfaces.cli import main as run_cli

        run_cli()
    except KeyboardInterrupt:  # only before the CLI's handlers were in place: it says every later one itself
        _interrupted.append(True)
        print("kb: interrupted; nothing was committed", file=sys.stderr)
        raise SystemExit(130) from None


def _said_in_one_line(unraisable: Any) -> None:
    """An error Python cannot raise, from a finalizer as objects are collected (GitPython's config parser, left
    half-made by a Ctrl-C, fails in __del__ at exit): never Python's traceback. After an interrupted command,
    which has said its one line, nothing; else one line. KB_DEBUG keeps Python's own report."""
    # read from sys.modules, never imported here: at exit the import system may be gone, and a process that never
    # loaded it (the light search path) installed no handler that could have recorded a signal
    interrupts = sys.modules.get("kbtool.store.interrupts")
    if _interrupted or (interrupts is not None and interrupts.signalled()):
        return
    error = unraisable.exc_value
    where = getattr(unraisable.object, "__qualname__", None) or type(unraisable.object).__name__
    print(f"kb: note: ignored {type(error).__name__} in {where} as an object was discarded: {error}", file=sys.stderr)


if __name__ == "__main__":
    main()
