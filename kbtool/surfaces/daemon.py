"""The warm side of `kb search`: one process per knowledge base that keeps the model, the
index and its vector matrix in memory and answers clients over a unix socket.

    python -m kbtool.surfaces.daemon ROOT      (started on demand by kbtool.surfaces.client)

It binds its socket first (so clients know it is coming), then refreshes the keyword index and
answers one request at a time, a JSON line in, a JSON line out, while the model loads and the
missing vectors are embedded on a background thread (hybrid searches answer from the keyword
leg, saying so, until then).
Before each search the index refreshes itself if the store changed, so a card written by
any process is found by the next query. It exits after KB_DAEMON_IDLE seconds (default
900) without a request, when asked to stop, or when a client of a different build asks
(the client then starts a fresh one).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path
from typing import Any

from ..model.errors import KbError
from . import operations
from .client import MAX_LINE, PROTOCOL, build_id, socket_path

IDLE_S = float(os.environ.get("KB_DAEMON_IDLE", "900"))
READ_TIMEOUT_S = 5.0


def handle(kb: Any, message: dict[str, Any], build: str) -> tuple[dict[str, Any], bool]:
    """(reply, keep serving)."""
    from ..model.contracts import SearchRequest

    if message.get("op") == "stop":
        return {"ok": True}, False
    if "protocol" not in message or "build" not in message:  # not a kb client's request: refuse it, keep serving
        return {"ok": False, "error": "bad request: not a kb client's message", "exit_code": 2}, True
    if message.get("protocol") != PROTOCOL or message.get("build") != build:
        return {"ok": False, "restart": True}, False
    try:
        if message.get("op") == "search":
            requests = [SearchRequest.parse(r) for r in message.get("requests", [])]
            results: Any = [kb.run_search(r).to_json() for r in requests]
        else:
            results = operations.run(kb, str(message.get("op")), message.get("args") or {})
    except KbError as exc:
        return {"ok": False, "error": str(exc), "exit_code": exc.exit_code}, True
    except Exception as exc:
        return {"ok": False, "error": f"internal error: {type(exc).__name__}: {exc}", "exit_code": 1}, True
    notices, kb.notices[:] = list(kb.notices), []
    return {"ok": True, "results": results, "notices": notices}, True


def _send(conn: socket.socket, reply: dict[str, Any]) -> None:
    try:
        conn.sendall(json.dumps(reply, ensure_ascii=False).encode() + b"\n")
    except OSError:
        pass  # the client went away (a broken pipe, a reset): serve the next one


def _read(conn: socket.socket) -> dict[str, Any]:
    buf = b""
    while not buf.endswith(b"\n") and len(buf) < MAX_LINE:
        data = conn.recv(1 << 16)
        if not data:
            break
        buf += data
    message = json.loads(buf or b"{}")
    if not isinstance(message, dict):
        raise ValueError("expected a JSON object")
    return message


def serve(root: Path) -> None:
    from ..kb import KnowledgeBase

    path = socket_path(root)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    path.unlink(missing_ok=True)
    server.bind(str(path))
    inode = path.stat().st_ino
    server.listen(64)
    build = build_id(root)
    try:
        kb = KnowledgeBase.open(root)
        # the keyword index before the first client is served; the model and vectors in the background
        kb.warm_in_background()  # its notices (an index rebuilt, a read-only KB) go to the first client
        print(f"kb daemon {os.getpid()} ready for {root}", flush=True)
        server.settimeout(IDLE_S)
        serving = True
        while serving:
            try:
                conn, _ = server.accept()
            except TimeoutError:
                break
            with conn:
                # a client sends its request as soon as it connects; one that stalls must not hold up the rest
                conn.settimeout(READ_TIMEOUT_S)
                try:
                    message = _read(conn)
                except (OSError, ValueError) as exc:
                    _send(conn, {"ok": False, "error": f"bad request: {exc}", "exit_code": 2})
                    continue
                reply, serving = handle(kb, message, build)
                _send(conn, reply)
    finally:
        server.close()
        # only remove the socket if it is still ours (a successor may have bound a new one)
        try:
            if path.exists() and path.stat().st_ino == inode:
                path.unlink()
        except OSError:
            pass


def main(argv: list[str]) -> None:
    if len(argv) != 1:
        print("usage: python -m kbtool.surfaces.daemon ROOT", file=sys.stderr)
        sys.exit(2)
    started = time.perf_counter()
    try:
        serve(Path(argv[0]).resolve())
    except KbError as exc:
        print(f"kb daemon: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)
    print(f"kb daemon {os.getpid()} exiting after {time.perf_counter() - started:.0f} s", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
