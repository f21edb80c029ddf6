"""Ctrl-C, SIGTERM and SIGHUP around the moments that must not be cut in two.

A write's commit (git add, git commit, dropping the journal), sync's fast-forward and a skill
install's switch of folders are each a critical section: `deferred()` holds those signals until it
ends, so the step either happens whole or not at all. Within it the Python handlers only record a
signal, and the signals are blocked in this thread's mask as well, which the git processes it starts
inherit: a terminal's Ctrl-C (sent to the whole process group) reaches git only after git is done.
Outside a section a signal acts as usual, and the interrupted code puts back what it changed.

The CLI runs each command inside `command()`: there SIGTERM and SIGHUP raise `Terminated` (so
cleanup runs, as it does for Ctrl-C), and once a critical section has completed, the command runs to
its end however it is signalled, and says its change is complete. A second signal after that one
interrupts at once.

A signal is never swallowed: the kb CLI's process (handle_for_this_process) remembers every signal it
receives, from its first line to its last (while its modules load, during the command, as it exits, as
the interpreter shuts down), and ends with 128 + the first one's number (130 for Ctrl-C) and one line
saying whether the change was made, never with a traceback and never with 0. Its very last Python code
(_last_word) blocks the signals, takes any still pending, and ends the process itself, so none can come
in a moment nobody looks.

Only the main thread's handlers are Python's to change: a section in another thread (the MCP server and
the web view write from worker threads) blocks the signals in that thread's mask alone, and the server's
own shutdown goes on as it would.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import os
import signal
import sys
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
    received: list[int] = field(default_factory=list)  # every signal the CLI's process received, first first
    said: bool = False  # the line saying the command was interrupted was written
    decided: int | None = None  # the exit status final_status() gave
    heard: int = 0  # how many of received final_status() knew of


_state = _State()


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def _record(signum: int, _frame: FrameType | None) -> None:
    _state.pending.append(signum)
    _state.received.append(signum)


def _interrupt(signum: int) -> None:
    """Within a command Ctrl-C is KeyboardInterrupt, as code expects; outside it (arguments being parsed, the
    command ended) Terminated, which click does not turn into its own exit."""
    if signum == signal.SIGINT and _state.in_command:
        raise KeyboardInterrupt
    raise Terminated(signum)


def _command_handler(signum: int, _frame: FrameType | None) -> None:
    """The CLI's handler outside critical sections."""
    _state.received.append(signum)
    if _state.completed and not _state.pending:
        _state.pending.append(signum)  # the change is made: finish the command, then say so
        return
    _interrupt(signum)


def _record_late(signum: int, _frame: FrameType | None) -> None:
    """The CLI's handler once its command is over: the exit status says it (final_status, _last_word)."""
    _state.received.append(signum)


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
    starts, or after it ends (and its change is made), is treated as one during it; and the last word at
    exit (see the module)."""
    if not _in_main_thread():
        return
    # one step as signals see it: one that comes meanwhile waits, and reaches _command_handler once all is in place
    masks = hasattr(signal, "pthread_sigmask")
    previous_mask = signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS)) if masks else set()
    try:
        _state.received, _state.said, _state.decided, _state.heard = [], False, None, 0
        for signum in SIGNALS:
            signal.signal(signum, _command_handler)
        if not _state.whole_process:
            atexit.register(_last_word)  # before anything the command registers: run after all of it
        _state.whole_process = True
    finally:
        if masks:
            signal.pthread_sigmask(signal.SIG_SETMASK, previous_mask)


def hold_from_now_on() -> None:
    """The CLI's command is over: a signal from now on acts on nothing, and is only remembered for the exit
    status (final_status, then _last_word)."""
    if _in_main_thread():
        for signum in SIGNALS:
            signal.signal(signum, _record_late)


def say(line: str) -> None:
    """The one line a command says when it is interrupted (on stderr)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)
    _state.said = True


def interrupted_line() -> str:
    """What an interrupted command says of its change."""
    if _state.completed:
        return "kb: interrupted after the change was committed; it is complete"
    return "kb: interrupted; nothing was committed"


def final_status(code: int) -> int:
    """The CLI process's exit status: code, unless it received a signal, then 128 + the first one's number,
    said in one line if nothing said it yet."""
    if _state.received:
        if not _state.said:
            say(interrupted_line())
        code = 128 + _state.received[0]
    _state.decided, _state.heard = code, len(_state.received)
    return code


def _last_word() -> None:
    """The CLI process's last Python code (see the module): a signal that came after final_status still ends it
    as interrupted; none can come after this looks (they are blocked, and the process ends here). What the
    interpreter's own shutdown would do for kb happens first: objects in reference cycles are collected (the
    index's SQLite connection closes, and checkpoints its write-ahead log) and the output is flushed."""
    if _state.decided is None:  # main did not get to decide (it is not the CLI's own run): Python goes on
        return
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_BLOCK, set(SIGNALS))
    gc.collect()
    if hasattr(signal, "sigpending"):
        _state.received += sorted(set(signal.sigpending()) & set(SIGNALS))
    code = _state.decided
    if len(_state.received) > _state.heard and code < 128:
        if not _state.said:
            say(interrupted_line())
        code = 128 + _state.received[_state.heard]
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


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


def signalled() -> bool:
    """Whether the CLI's process received a signal it handles (SIGINT, SIGTERM, SIGHUP) during its run."""
    return bool(_state.received)


def committed_before_interrupt() -> bool:
    """Whether this command completed a critical section (its change is made) before a signal ended it."""
    return _state.completed


def exit_code(exc: BaseException) -> int:
    """The shell's status for a command a signal ended: 128 + the signal's number. A signal that Python's own
    handler raised (Ctrl-C before kb's were in place) is remembered as received, so final_status says it."""
    signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
    if not _state.received:
        _state.received.append(int(signum))
    return 128 + int(signum)
