"""The `kb` command and `python -m kbtool`: the CLI, with a Ctrl-C during start-up ended cleanly.

`python -m kbtool` and the `kb` command (pyproject's entry point): the CLI, entered so that a Ctrl-C while its
modules load (most of its first second, before the CLI's own handlers are in place) ends it as one during a
command does: one line, exit 130 (kbtool/store/interrupts.py), not a KeyboardInterrupt traceback. A plain
`kb search` is answered without loading the CLI (kbtool/surfaces/daemon/search_command.py): the command an agent
runs most, in a new process each time."""

from __future__ import annotations

import sys


def main() -> None:
    try:
        from kbtool.surfaces.daemon.search_command import run

        status = run(sys.argv[1:])
        if status is not None:
            raise SystemExit(status)
        from kbtool.surfaces.cli import main as run_cli

        run_cli()
    except KeyboardInterrupt:  # only before the CLI's handlers were in place: it says every later one itself
        print("kb: interrupted; nothing was committed", file=sys.stderr)
        raise SystemExit(130) from None


if __name__ == "__main__":
    main()
