"""Ctrl-C, SIGTERM and SIGHUP around the moments that must not be cut in two.

A write's commit (git add, git commit, dropping the journal), sync's fast-forward and a skill
install's switch of folders are each a critical section: `deferred()` holds those signals until it
ends, so the step either happens whole or not at all. Within it the Python handlers only record a
signal, and the signals are blocked in this thread's mask as well, which the git processes it starts
inherit: a terminal's Ctrl-C (sent to the whole process group) reaches git only after git is done.
Outside a section a signal acts as usual, and the interrupted code puts back what it changed.

The CLI runs each command inside `command()`: there SIGTERM and SIGHUP raise `Terminated` (so
cleanup runs, as it does for Ctrl-C), and once a critical section has completed, the command runs to
its end however it is signalled: a change that was committed is reported as done, never as
interrupted. A second signal after that one interrupts at once.

Only the main thread's handlers are Python's to change: a section in another thread (the MCP server and
the web view write from worker threads) blocks the signals in that thread's mask alone, and the server's
own shutdown goes on as it would.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

SIGNALS = tuple(s for s in (signal.SIGINT, signal.SIGTERM, getattr(signal, "SIGHUP", None)) if s is not None)


class Terminated(BaseException):
    """SIGTERM or SIGHUP, raised in the CLI (as Ctrl-C raises KeyboardInterrupt) so cleanup runs."""

    def __init__(self, signum: int):
        super().__init__(f"signal {signum}")
        self.signum = signum


@dataclass
class _State:
    depth: int = 0  # critical sections entered, outermost first
    pending: list[int] = field(default_factory=list)  # signals received within them
    in_command: bool = False  # the CLI's command() is active
    completed: bool = False  # a critical section of this command finished: finish the command too
    saved: dict[int, Any] = field(default_factory=dict)  # handlers the outermost section replaced
    whole_process: bool = False  # handle_for_this_process() was called: the kb CLI's own process


_state = _State()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _record(signum: int, _frame: FrameType | None) -> None:
    _state.pending.append(signum)


def _interrupt(signum: int) -> None:
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _command_handler(signum: int, _frame: FrameType | None) -> None:
    """The CLI's handler outside critical sections."""
    if _state.completed and not _state.pending:
        _state.pending.append(signum)  # the change is made: finish the command, then say so
        return
    _interrupt(signum)


@contextmanager
def deferred(commits: bool = True) -> Iterator[None]:
    """A critical section: SIGINT, SIGTERM and SIGHUP wait until it ends (see the module). Outside
    the CLI a signal received within it is delivered when it ends; in the CLI, when the section
    completes and commits is true (completing it made the change: a commit, a switch of folders),
    the command runs to its end first."""
    masks = hasattr(signal, "pthread_sigmask")  # POSIX; elsewhere only the handlers defer
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS)) if masks else set()  # git inherits it
    main = _in_main_thread()
    if main:
        if _state.depth == 0:
            _state.saved = {s: signal.signal(s, _record) for s in SIGNALS}
        _state.depth += 1
    completed = False
    try:
        yield
        completed = commits
    finally:
        if masks:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)  # what arrived meanwhile reaches _record now
        if main:
            _state.depth -= 1
            if _state.depth == 0:
                _leave(completed)


def _leave(completed: bool) -> None:
    """The outermost section ends: put the handlers back and act on what was received."""
    for signum, handler in _state.saved.items():
        signal.signal(signum, handler)
    _state.saved = {}
    if _state.in_command and completed:
        _state.completed = True
        del _state.pending[1:]  # one is kept: the command says it finished despite it
        return
    pending, _state.pending = _state.pending[:1], []
    for signum in pending:
        signal.raise_signal(signum)  # the handler that is back acts on it now (raises, or ends the process)


def handle_for_this_process() -> None:
    """The kb CLI's process: the command handler for its whole life, so a signal just before the command
    starts, or after it ends (and its change is made), is treated as one during it."""
    if _in_main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _command_handler)
        _state.whole_process = True


def ignore_from_now_on() -> None:
    """The CLI's command is over and its exit status decided: a signal while the interpreter shuts down (when
    Python puts back the default handlers, which would end the process as if it were interrupted) is ignored."""
    if _in_main_thread():
        for signum in SIGNALS:
            signal.signal(signum, signal.SIG_IGN)


@contextmanager
def command() -> Iterator[list[int]]:
    """One CLI command: SIGTERM and SIGHUP raise Terminated, and a command whose critical section
    completed runs to its end. Yields a list that, once the command ends, holds the signal it finished
    despite (or nothing)."""
    if not _in_main_thread() or _state.in_command:  # a group's command inside the top-level one: one scope
        yield []
        return
    saved = {} if _state.whole_process else {s: signal.signal(s, _command_handler) for s in SIGNALS}
    _state.in_command, _state.completed, _state.pending = True, False, []
    finished_despite: list[int] = []
    try:
        yield finished_despite
    finally:
        finished_despite.extend(_state.pending)
        _state.pending = []
        if not _state.whole_process:  # in a test's process: put its handlers back
            _state.in_command, _state.completed = False, False
            for signum, handler in saved.items():
                signal.signal(signum, handler)
        else:  # a signal from now until the process exits: the command's exit status stands
            _state.in_command = False


def committed_before_interrupt() -> bool:
    """Whether this command completed a critical section (its change is made) before a signal ended it."""
    return _state.completed


def exit_code(exc: BaseException) -> int:
    """The shell's status for a command a signal ended: 128 + the signal's number."""
    signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
    return 128 + int(signum)
