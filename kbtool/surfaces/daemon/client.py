"""The thin side of `kb search`: hand the query to the warm daemon, start it if needed.

Agents run `kb search` as a fresh process many times a session. Importing
sentence-transformers costs ~4 s here, so the model lives in a daemon (kbtool.surfaces.daemon.server)
that this client reaches over a unix socket; the client itself imports nothing heavier
than the standard library. With KB_DAEMON=0, or when no daemon can be started, the
search runs in this process instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from kbtool.model.errors import BadInput, CheckFailed, KbError
from kbtool.model.vocabulary import CONFIG_FILE
from kbtool.store import daemons
from kbtool.store.daemons import DaemonEntry
from kbtool.store.locate import state_dir
from kbtool.surfaces.daemon.peers import UNIX_PATH_MAX, ForeignSocket, check_peer, private_dir

PROTOCOL = 2  # 2: the daemon sends HEARTBEAT while a request waits or runs
START_TIMEOUT_S = 60.0  # until the daemon's socket accepts (it binds before loading the model)
# The daemon sends HEARTBEAT every half second while it works on a request: silence this long means it
# is stopped (SIGSTOP, a debugger) or gone, and the search runs in this process instead, with a note.
# A daemon that keeps beating but never answers (a request stuck in the index) is left after
# ANSWER_TIMEOUT_S, the same way.
HEARTBEAT = b" "  # whitespace: a reply line with any number of them in front is still one JSON document
SILENCE_S = 5.0
ANSWER_TIMEOUT_S = 300.0
CONNECT_TIMEOUT_S = 5.0  # a stopped daemon's backlog fills, and then connect() would wait forever
MAX_LINE = 64 * 1024 * 1024  # of a reply
MAX_REQUEST = 16 * 1024 * 1024  # what the daemon reads; a bigger --batch searches in this process
STOP_WAIT_S = 5.0  # for a daemon asked to stop to exit, before it gets SIGTERM


def socket_path(root: Path) -> Path:
    """In the state folder (.kb/, or the cache for a read-only knowledge base) when it fits in a unix
    socket address (108 bytes), else in this user's private folder for sockets (peers.private_dir:
    ForeignSocket when that folder is not this user's alone)."""
    local = state_dir(root) / "daemon.sock"
    if len(str(local)) < UNIX_PATH_MAX:
        return local
    return private_dir() / f"{hashlib.sha1(str(root).encode()).hexdigest()[:16]}.sock"


def build_id(root: Path) -> str:
    """What a daemon must match to serve this client: the version and the content of the code (two
    copies of the same code match; a touched file does not restart anything), kb.toml's content and
    the embedder settings. Hashing ~250 KB of source takes ~1 ms."""
    from kbtool import __version__

    package = Path(__file__).parents[2]  # kbtool/, from kbtool/surfaces/daemon/client.py
    digest = hashlib.sha256(f"kbtool {__version__}\n".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(f"{path.relative_to(package)}\n".encode() + path.read_bytes())
    config = root / CONFIG_FILE
    digest.update(b"kb.toml\n" + (config.read_bytes() if config.exists() else b""))
    for name in ("KB_EMBEDDER", "KB_EMBED_PRECISION", "KB_EMBED_RUNTIME"):
        digest.update(f"{name}={os.environ.get(name, '')}\n".encode())
    return digest.hexdigest()


def run_searches(root: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    if os.environ.get("KB_DAEMON", "1") == "0":
        return search_in_process(root, requests)
    try:
        results: list[dict[str, Any]] = _ask(root, {"op": "search", "requests": requests})["results"]
        return results
    except DaemonUnavailable as exc:
        print(f"kb: note: searching in this process ({exc})", file=sys.stderr)
        return search_in_process(root, requests)


def run_operation(root: Path, op: str, args: dict[str, Any] | None = None) -> Any:
    """list, gaps or stats: answered by the daemon when one is running (its index is warm), else in
    this process. Unlike search, these never start a daemon: they need no model."""
    args = args or {}
    if os.environ.get("KB_DAEMON", "1") != "0":
        try:
            return _ask(root, {"op": op, "args": args}, start=False)["results"]
        except DaemonUnavailable:
            pass
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.surfaces.daemon import operations

    kb = KnowledgeBase.open(root)
    result = operations.run(kb, op, args)
    for notice in kb.notices:
        print(f"kb: note: {notice}", file=sys.stderr)
    return result


def search_in_process(root: Path, requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.contracts import SearchRequest

    kb = KnowledgeBase.open(root)
    parsed = [SearchRequest.parse(r) for r in requests]  # all validated before any runs
    results = [kb.search_page(r).to_json() for r in parsed]
    for notice in kb.notices:
        print(f"kb: note: {notice}", file=sys.stderr)
    return results


class DaemonUnavailable(Exception):
    pass


def _ask(root: Path, message: dict[str, Any], restarted: bool = False, start: bool = True) -> dict[str, Any]:
    message = {**message, "protocol": PROTOCOL, "build": build_id(root), "root": str(root)}
    line = json.dumps(message, ensure_ascii=False).encode() + b"\n"
    if len(line) > MAX_REQUEST:
        raise DaemonUnavailable(f"the request is over the daemon's {MAX_REQUEST // (1 << 20)} MB")
    try:
        sock, started = _connect(root) if start else (_try_connect(socket_path(root)), None)
    except ForeignSocket as exc:  # another user's socket or folder: never sent a query
        raise DaemonUnavailable(f"kb will not use its daemon's socket: {exc}") from None
    if sock is None:
        raise DaemonUnavailable("no search daemon is running")
    try:
        sock.settimeout(SILENCE_S)
        sock.sendall(line)
        reply = _read_line(sock)
    except (OSError, DaemonUnavailable) as exc:
        # a daemon started just now binds its socket before it reads kb.toml: one that then fails
        # takes the connection down with it, and says why in its log
        if started is not None and _exited(started):
            raise DaemonUnavailable(f"the search daemon exited at start ({_last_log_line(root)})") from None
        if isinstance(exc, DaemonUnavailable):
            raise
        raise DaemonUnavailable(f"the search daemon did not answer: {exc}") from None
    finally:
        sock.close()
    if reply.get("restart"):
        if restarted or not start:
            raise DaemonUnavailable("the search daemon keeps asking for a restart")
        _wait_gone(root)
        return _ask(root, message, restarted=True)
    if not reply.get("ok"):
        code = reply.get("exit_code", 1)
        error = BadInput if code == 2 else CheckFailed if code == 1 else KbError
        raise error(reply.get("error", "the search daemon failed"))
    for notice in reply.get("notices", []):
        print(f"kb: note: {notice}", file=sys.stderr)
    return reply


def _read_line(sock: socket.socket) -> dict[str, Any]:
    """The daemon's reply: its heartbeats reset the wait for the next byte (SILENCE_S), up to ANSWER_TIMEOUT_S
    in all."""
    chunks, size = [], 0
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while True:
        sock.settimeout(max(0.0, min(SILENCE_S, deadline - time.monotonic())))
        try:
            data = sock.recv(1 << 16)
        except TimeoutError:
            silent = time.monotonic() < deadline
            raise DaemonUnavailable(
                f"the search daemon said nothing for {SILENCE_S:.0f} s; it may be stopped"
                if silent
                else f"the search daemon did not answer within {ANSWER_TIMEOUT_S:.0f} s"
            ) from None
        if not data:
            break
        chunks.append(data)
        size += len(data)
        if data.endswith(b"\n") or size > MAX_LINE:
            break
    line = b"".join(chunks).strip()
    if not line:
        raise DaemonUnavailable("the search daemon closed the connection")
    try:
        reply = json.loads(line)
    except ValueError:  # cut off: the daemon died while it answered
        raise DaemonUnavailable("the search daemon's answer was cut off") from None
    if not isinstance(reply, dict):
        raise DaemonUnavailable("the search daemon's answer was not a JSON object")
    return reply


def _try_connect(path: Path) -> socket.socket | None:
    """A connection to the daemon at path; None when nothing listens there; ForeignSocket when another user
    does (nothing is sent to it, and its socket is left where it is)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(CONNECT_TIMEOUT_S)
    try:
        sock.connect(str(path))
        check_peer(sock, f"the process listening at {path}")
        return sock
    except OSError:
        sock.close()
        return None
    except ForeignSocket:
        sock.close()
        raise


def _exited(daemon: subprocess.Popen[bytes], wait_s: float = 5.0) -> bool:
    try:
        daemon.wait(timeout=wait_s)
        return True
    except subprocess.TimeoutExpired:
        return False


def _last_log_line(root: Path) -> str:
    log = state_dir(root) / "daemon.log"
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines() if log.exists() else []
    return lines[-1] if lines else "no log"


def _connect(root: Path) -> tuple[socket.socket, subprocess.Popen[bytes] | None]:
    """A connection to the daemon, and the daemon process when this call started it."""
    path = socket_path(root)
    sock = _try_connect(path)
    if sock is not None:
        return sock, None
    from filelock import FileLock

    state = state_dir(root)
    with FileLock(str(state / "daemon-start.lock"), timeout=START_TIMEOUT_S):
        sock = _try_connect(path)  # another client may have started it while we waited
        if sock is not None:
            return sock, None
        if path.exists() and not path.is_socket():  # not ours to remove: say so, and search in-process
            raise DaemonUnavailable(f"{path} is not a socket; remove it to let kb start its search daemon")
        path.unlink(missing_ok=True)  # a socket file left by a daemon that died
        with open(state / "daemon.log", "ab") as log:
            daemon = subprocess.Popen(
                daemon_command(root),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                cwd=str(state),
            )
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            sock = _try_connect(path)
            if sock is not None:
                return sock, daemon
            if daemon.poll() is not None:  # it could not start (a malformed kb.toml): say so now, not in 60 s
                raise DaemonUnavailable(f"the search daemon exited at start ({_last_log_line(root)})")
            time.sleep(0.02)
    raise DaemonUnavailable(
        f"no search daemon answered at {path} within {START_TIMEOUT_S:.0f} s; see {state / 'daemon.log'}"
    )


def daemon_command(root: Path) -> list[str]:
    """The daemon runs this client's own kbtool, whatever the working directory holds.

    -P keeps the working directory off the import path, and the folder this package was imported
    from goes first: a knowledge base may hold a folder named kbtool (this repository does; a hostile
    clone might), and the daemon must neither run its code nor differ from the client that asks."""
    package_parent = str(Path(__file__).resolve().parents[3])  # the folder holding kbtool/
    return [sys.executable, "-P", "-c", daemons.DAEMON_CODE, package_parent, str(root)]


def _wait_gone(root: Path, timeout: float = 10.0) -> None:
    try:
        path = socket_path(root)
    except ForeignSocket:
        return  # no daemon of this user can be there
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and path.exists():
        time.sleep(0.02)


def stop_daemon(root: Path) -> bool:
    """Stop the daemon of this KB; False when none was running."""
    entry = daemons.running(root)
    if entry is not None:
        return stop_running(entry)
    # one this registry does not know (started by an older kb): its socket is all there is to ask
    try:
        asked = _ask_to_stop(socket_path(root))
    except ForeignSocket:
        return False
    if not asked:
        return False
    _wait_gone(root)
    return True


def stop_running(entry: DaemonEntry) -> bool:
    """Ask a daemon to exit over its socket; one that does not within STOP_WAIT_S (still opening its knowledge
    base, or stopped) gets SIGTERM. True once its process is gone."""
    _ask_to_stop(Path(entry.socket))
    return daemons.wait_gone(entry.pid, STOP_WAIT_S) or daemons.terminate(entry)


def _ask_to_stop(path: Path) -> bool:
    """False when nothing of this user's listens at path."""
    try:
        sock = _try_connect(path)
    except ForeignSocket:
        return False
    if sock is None:
        return False
    try:
        sock.sendall(json.dumps({"op": "stop", "protocol": PROTOCOL}).encode() + b"\n")
        _read_line(sock)
    except (OSError, DaemonUnavailable):
        pass
    finally:
        sock.close()
    return True
