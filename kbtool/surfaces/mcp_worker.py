"""The one thread every MCP tool call runs on (the facade and its SQLite index are not for two threads at
once), taking reads before writes.

A write (a commit, its index refresh) costs a hundred milliseconds or more; a search or a get a few.
Under a team's agents, first come first served has every read wait behind every write queued ahead of
it. Here the reads go first, and no write starves: a write waits for the reads queued when it arrived
(or, behind another write, for those queued when that one ended), never for reads that came after.
Each agent waits for its own write's answer before it reads again, so it still reads what it wrote.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any

Task = tuple[Future[Any], Callable[..., Any], tuple[Any, ...], dict[str, Any]]


class ReadsFirst(Executor):
    """An executor of one thread: submit() for a read, submit_write() for a write."""

    def __init__(self, name: str = "kb-serve"):
        self._reads: deque[Task] = deque()
        self._writes: deque[Task] = deque()
        self._ahead = 0  # reads that may still go before the oldest waiting write
        self._after_write = False
        self._closed = False
        self._ready = threading.Condition()
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self._put(False, fn, args, kwargs)

    def submit_write(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        return self._put(True, fn, args, kwargs)

    def _put(self, write: bool, fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Future[Any]:
        future: Future[Any] = Future()
        with self._ready:
            if self._closed:
                raise RuntimeError("cannot schedule new calls after shutdown")
            if write and not self._writes:
                self._ahead = len(self._reads)  # the reads already waiting go first
            (self._writes if write else self._reads).append((future, fn, args, kwargs))
            self._ready.notify()
        return future

    def _take(self) -> Task | None:
        with self._ready:
            while not (self._reads or self._writes):
                if self._closed:
                    return None
                self._ready.wait()
            if self._after_write:  # the reads that queued while it ran go before the next write
                self._ahead, self._after_write = len(self._reads), False
            if self._reads and (not self._writes or self._ahead > 0):
                if self._writes:
                    self._ahead -= 1
                return self._reads.popleft()
            self._after_write = True
            return self._writes.popleft()

    def _run(self) -> None:
        while (task := self._take()) is not None:
            future, fn, args, kwargs = task
            if not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn(*args, **kwargs)
            except BaseException as exc:  # the caller's to handle, as ThreadPoolExecutor hands it over
                future.set_exception(exc)
            else:
                future.set_result(result)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._ready:
            self._closed = True
            if cancel_futures:
                for future, *_ in (*self._reads, *self._writes):
                    future.cancel()
            self._ready.notify()
        if wait:
            self._thread.join()
