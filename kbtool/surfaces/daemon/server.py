"""The warm side of `kb search`: a process that keeps the model and index in memory.

There is one per knowledge base. It holds the model, the index and its vector matrix, and answers
clients over a unix socket.

    python -m kbtool.surfaces.daemon.server ROOT      (started on demand by kbtool.surfaces.daemon.client)

It binds its socket first (so clients know it is coming), then opens the knowledge base and
refreshes the keyword index, and answers requests, a JSON line in, a JSON line out, while the model
loads and the missing vectors are embedded on a background thread (hybrid searches answer from the
keyword leg, saying so, until then).
Each client is read on a thread of its own, within a deadline for the whole request, so one that
sends a byte now and then holds up nobody; the requests themselves run one at a time on a single
worker (the index is not for two threads at once). While a client's request waits or runs, a space
goes to it every HEARTBEAT_S: a client that hears nothing for a few seconds knows the daemon is
stopped or gone and searches in its own process. A request must be a JSON object nested no deeper
than MAX_DEPTH: a hostile one cannot exhaust the parser's stack.
Only this user's clients are heard: a connection from another user is closed unread (peers.py), and the
socket file is made mode 0600.
Before each search the index refreshes itself if the store changed, so a card written by
any process is found by the next query. It exits after kb.toml's [daemon] idle_minutes (default 15;
0: never; $KB_DAEMON_IDLE, in seconds, overrides it) without a request, when asked to stop (a stop
request, or SIGTERM from `kb daemon stop`), or when a client of a different build asks (the client
then starts a fresh one). While it runs, its entry in this user's registry (kbtool/store/daemons.py)
says its pid, root and start time to `kb status` and `kb daemon stop --all`.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from pathlib import Path
from typing import Any

from kbtool.model.errors import KbError
from kbtool.store import daemons
from kbtool.store.config import DaemonSection
from kbtool.surfaces.daemon import operations
from kbtool.surfaces.daemon.client import HEARTBEAT, MAX_REQUEST, PROTOCOL, build_id, socket_path
from kbtool.surfaces.daemon.peers import ForeignSocket, check_peer

READ_DEADLINE_S = 5.0  # for a whole request: a kb client sends it as soon as it connects
HEARTBEAT_S = 0.5
SEND_TIMEOUT_S = 5.0  # a client that stops reading its answer is dropped after this
MAX_CLIENTS = 32  # connections read or answered at once; past this a new one is closed at once
MAX_DEPTH = 32  # of a request's nesting (a search request needs 4)
POLL_S = 0.5  # how often the accept loop looks whether it was asked to stop

# a JSON string, escapes included: what the depth count skips, so brackets inside strings do not count
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
_BRACKET = re.compile(rb"[\[\]{}]")


class BadRequest(ValueError):
    pass


def handle(kb: Any, message: dict[str, Any], build: str) -> tuple[dict[str, Any], bool]:
    """(reply, keep serving)."""
    from kbtool.model.contracts import SearchRequest

    if message.get("op") == "stop":
        return {"ok": True}, False
    if "protocol" not in message or "build" not in message:  # not a kb client's request: refuse it, keep serving
        return {"ok": False, "error": "bad request: not a kb client's message", "exit_code": 2}, True
    if message.get("protocol") != PROTOCOL or message.get("build") != build:
        return {"ok": False, "restart": True}, False
    try:
        if message.get("op") == "search":
            requests = [SearchRequest.parse(r) for r in message.get("requests", [])]
            results: Any = [kb.search_page(r).to_json() for r in requests]
        else:
            results = operations.run(kb, str(message.get("op")), message.get("args") or {})
    except KbError as exc:
        return {"ok": False, "error": str(exc), "exit_code": exc.exit_code}, True
    except Exception as exc:
        return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}", "exit_code": 1}, True
    notices, kb.notices[:] = list(kb.notices), []
    return {"ok": True, "results": results, "notices": notices}, True


def parse_request(raw: bytes) -> dict[str, Any]:
    """A request line as a JSON object; BadRequest when it is not one, or nests deeper than MAX_DEPTH
    (counted before parsing: the parser recurses once per level)."""
    depth = deepest = 0
    for bracket in _BRACKET.findall(_JSON_STRING.sub(b"", raw)):
        depth += 1 if bracket in b"[{" else -1
        deepest = max(deepest, depth)
        if deepest > MAX_DEPTH:
            raise BadRequest(f"nested deeper than {MAX_DEPTH} levels")
    try:
        message = json.loads(raw or b"{}")
    except ValueError as exc:
        raise BadRequest(f"not JSON ({exc})") from None
    if not isinstance(message, dict):
        raise BadRequest("expected a JSON object")
    return message


def read_request(conn: socket.socket, deadline_s: float = READ_DEADLINE_S) -> dict[str, Any]:
    """One request line, within deadline_s for all of it however the client spaces its bytes."""
    deadline = time.monotonic() + deadline_s
    buf = b""
    while not buf.endswith(b"\n"):
        left = deadline - time.monotonic()
        if left <= 0:
            raise BadRequest(f"no whole request within {deadline_s:.0f} s")
        conn.settimeout(left)
        try:
            data = conn.recv(1 << 16)
        except TimeoutError:
            raise BadRequest(f"no whole request within {deadline_s:.0f} s") from None
        if not data:
            break
        buf += data
        if len(buf) > MAX_REQUEST:
            raise BadRequest(f"over {MAX_REQUEST // (1 << 20)} MB")
    return parse_request(buf)


def _send(conn: socket.socket, data: bytes) -> bool:
    """False when the client went away (a broken pipe, a reset) or stopped reading."""
    try:
        conn.settimeout(SEND_TIMEOUT_S)
        conn.sendall(data)
        return True
    except OSError:
        return False


def _reply_line(reply: dict[str, Any]) -> bytes:
    return json.dumps(reply, ensure_ascii=False).encode() + b"\n"


def idle_seconds(settings: DaemonSection) -> float | None:
    """How long the daemon waits for a request before it exits; None: for ever. $KB_DAEMON_IDLE (seconds)
    overrides kb.toml, so a test run's daemons never outlive it by long."""
    override = os.environ.get("KB_DAEMON_IDLE")
    if override:
        return float(override) or None
    return settings.idle_seconds


class Daemon:
    """The accept loop, a thread per client, and the one worker every request runs on. The worker opens
    the knowledge base first, so clients that connect meanwhile hear heartbeats while they wait."""

    def __init__(self, root: Path, server: socket.socket):
        self.root, self.build, self.server = root, build_id(root), server
        self.path = socket_path(root)
        self.inode = self.path.stat().st_ino
        self.kb: Any = None
        self.failure: Exception | None = None  # why the knowledge base could not be opened
        self.worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kb-daemon")
        self.clients = threading.BoundedSemaphore(MAX_CLIENTS)
        self.stopping = threading.Event()
        self.busy = 0  # clients connected now: the daemon is not idle while any is
        self.last_seen = time.monotonic()
        self.idle_s = idle_seconds(DaemonSection())  # until kb.toml is read, on the worker
        self._count = threading.Lock()

    def _open(self) -> None:
        from kbtool.facade.knowledge_base import KnowledgeBase

        try:
            kb = KnowledgeBase.open(self.root)
            # the keyword index before the first request runs; the model and vectors in the background
            # its notices (an index rebuilt, a read-only KB) go to the first client; its timings to the log
            kb.warm_in_background(report=lambda message: print(f"kb daemon {os.getpid()} {message}", flush=True))
            kb.warm_sources()
        except Exception as exc:  # a malformed kb.toml: the process exits saying so, in its log
            self.failure = exc
            self.stopping.set()
            return
        self.idle_s = idle_seconds(kb.config.daemon)
        self.kb = kb
        print(f"kb daemon {os.getpid()} ready for {self.root}", flush=True)

    def _handle(self, message: dict[str, Any]) -> tuple[dict[str, Any], bool] | None:
        """None when the knowledge base could not be opened: the connection closes, and the client reads why
        in the log."""
        return None if self.kb is None else handle(self.kb, message, self.build)

    def run(self) -> None:
        self.worker.submit(self._open)
        self.server.settimeout(POLL_S)
        while not self.stopping.is_set():
            try:
                conn, _ = self.server.accept()
            except TimeoutError:
                with self._count:
                    idle = self.idle_s is not None and time.monotonic() - self.last_seen > self.idle_s
                    if not self.busy and idle:
                        print(f"kb daemon {os.getpid()} idle for {self.idle_s:.0f} s", flush=True)
                        return
                continue
            except OSError:  # the listener was shut down: asked to stop
                return
            try:
                check_peer(conn, "a client")
            except (ForeignSocket, OSError) as exc:  # another user's: not a byte read from it or sent to it
                print(f"kb daemon {os.getpid()} refused a connection: {exc}", flush=True)
                conn.close()
                continue
            if not self.clients.acquire(blocking=False):
                conn.close()  # too many at once: the client searches in its own process
                continue
            with self._count:
                self.busy += 1
            threading.Thread(target=self._serve_client, args=(conn,), name="kb-client", daemon=True).start()

    def stop_listening(self) -> None:
        """No new client from now on: the socket file goes (if it is still ours: a successor may have bound a
        new one) and the accept loop wakes and ends."""
        self.stopping.set()
        try:
            if self.path.exists() and self.path.stat().st_ino == self.inode:
                self.path.unlink()
        except OSError:
            pass
        with contextlib.suppress(OSError):
            self.server.shutdown(socket.SHUT_RDWR)

    def _serve_client(self, conn: socket.socket) -> None:
        try:
            with conn:
                try:
                    message = read_request(conn)
                except (OSError, BadRequest) as exc:
                    _send(conn, _reply_line({"ok": False, "error": f"bad request: {exc}", "exit_code": 2}))
                    return
                answer = self.worker.submit(self._handle, message)
                while True:
                    try:
                        answered = answer.result(timeout=HEARTBEAT_S)
                        break
                    except FutureTimeout:
                        if not _send(conn, HEARTBEAT):  # gone: its request need not run at all
                            answer.cancel()
                            return
                if answered is None:
                    return
                reply, serving = answered
                if not serving:
                    self.stop_listening()  # before the reply: a client that reconnects finds no socket
                _send(conn, _reply_line(reply))
        finally:
            with self._count:
                self.busy -= 1
                self.last_seen = time.monotonic()
            self.clients.release()


def serve(root: Path) -> None:
    path = socket_path(root)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)
    # the socket file this user's alone from the moment it exists (still one thread: the umask is the process's)
    umask = os.umask(0o177)
    try:
        server.bind(str(path))
    finally:
        os.umask(umask)
    server.listen(64)
    daemon = Daemon(root, server)
    daemons.register(root, path)
    try:
        daemon.run()
    finally:
        daemons.unregister(root)
        daemon.stop_listening()
        server.close()
    if daemon.failure is not None:
        raise daemon.failure


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        print("usage: python -m kbtool.surfaces.daemon.server ROOT", file=sys.stderr)
        sys.exit(2)
    started = time.perf_counter()
    # `kb daemon stop` sends SIGTERM when a daemon does not answer its stop request: exit through serve's
    # cleanup (socket file, registry entry) rather than die where it stands
    signal.signal(signal.SIGTERM, _exit_on_signal)
    try:
        serve(Path(argv[0]).resolve())
    except KbError as exc:
        print(f"kb daemon: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    except ForeignSocket as exc:  # its socket's folder is not this user's alone: no socket, no daemon
        print(f"kb daemon: {exc}", file=sys.stderr)
        sys.exit(2)
    print(f"kb daemon {os.getpid()} exiting after {time.perf_counter() - started:.0f} s", flush=True)


def _exit_on_signal(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    main(sys.argv[1:])
