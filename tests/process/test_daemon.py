"""`kb search` through the warm daemon: started on demand, reused, sees every write, stays light."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import modules_loaded_by, run_kb
from kbtool.surfaces.daemon.client import PROTOCOL, socket_path, stop_daemon


@pytest.fixture
def env(kb):
    environment = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON_IDLE": "60"}
    environment.pop("KB_DAEMON", None)
    yield environment
    stop_daemon(kb.root)


def test_search_starts_one_daemon_and_reuses_it(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Chunked prefill at 32k?", check=True)
    first = json.loads(run_kb(env, kb.root, "search", "chunked prefill", "--json", check=True).stdout)
    assert first["hits"][0]["id"] == "chunked-prefill-at-32k"
    assert socket_path(kb.root).exists()
    for _ in range(3):
        run_kb(env, kb.root, "search", "prefill", "-k", "1", check=True)
    log = (kb.root / ".kb" / "daemon.log").read_text()
    assert log.count("ready for") == 1, log


def test_the_daemon_logs_how_long_the_model_and_the_vectors_took(kb, env):
    """What bench/bench_first_search.py breaks the time until hybrid answers down by."""
    import re
    import time

    run_kb(env, kb.root, "add", "gap", "--title", "Chunked prefill at 32k?", check=True)
    run_kb(env, kb.root, "search", "chunked prefill", check=True)
    log = kb.root / ".kb" / "daemon.log"
    deadline = time.monotonic() + 60
    while "vectors embedded" not in log.read_text():
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    text = log.read_text()
    assert re.search(r"kb daemon \d+ embedding model loaded in [\d.]+ s \(hashing-384\)", text), text
    assert re.search(r"kb daemon \d+ \d+ vectors embedded in [\d.]+ s \([\d.]+ chunks/s\)", text), text


def test_a_write_from_another_process_is_found_by_the_next_search(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "First question?", check=True)
    run_kb(env, kb.root, "search", "first", check=True)
    run_kb(env, kb.root, "add", "finding", "--title", "Speculative decoding doubles single-stream tok/s", check=True)
    hits = json.loads(run_kb(env, kb.root, "search", "speculative decoding", "-k", "1", "--json", check=True).stdout)[
        "hits"
    ]
    assert hits[0]["id"] == "speculative-decoding-doubles-single-stream-tok-s"
    run_kb(env, kb.root, "edit", "first-question", "--title", "Renamed: is prefill compute bound?", check=True)
    hits = json.loads(run_kb(env, kb.root, "search", "prefill compute bound", "-k", "1", "--json", check=True).stdout)[
        "hits"
    ]
    assert hits[0]["title"] == "Renamed: is prefill compute bound?"


def test_bad_input_through_the_daemon_is_one_line_and_exit_2(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Anything?", check=True)
    run_kb(env, kb.root, "search", "anything", check=True)
    for args, message in [
        (["search", "x", "--where", "applies_to.gpu=1"], "no card kind has the field"),
        (["search", "   "], "empty query"),
        (["search", "x", "-k", "0"], "k must be"),
    ]:
        out = run_kb(env, kb.root, *args, check=False)
        assert out.returncode == 2 and message in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr


def test_the_client_process_stays_light(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Light?", check=True)
    run_kb(env, kb.root, "search", "light", check=True)  # the daemon is up
    stdout, loaded = modules_loaded_by(["--kb", str(kb.root), "search", "light", "--json"], env=env)
    assert json.loads(stdout)["hits"][0]["id"] == "light"
    heavy = {
        "torch",
        "sentence_transformers",
        "numpy",
        "sqlite3",
        "git",
        "yaml",
        "markdown_it",
        "kbtool.facade.knowledge_base",
        "kbtool.facade.core",
        "kbtool.search.index",
        "kbtool.model.cards",  # the card models: 110-230 ms of each command's start, once imported for help text
        # the CLI itself: typer loads pydantic, ~0.3 s of each `kb search` process (search_command reads it instead)
        "typer",
        "pydantic",
        "kbtool.surfaces.cli",
    }
    assert not heavy & loaded, heavy & loaded


def test_a_daemon_of_another_build_hands_over(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Handover?", check=True)
    run_kb(env, kb.root, "search", "handover", check=True)
    sock = socket.socket(socket.AF_UNIX)
    sock.connect(str(socket_path(kb.root)))
    sock.sendall(json.dumps({"op": "search", "protocol": PROTOCOL, "build": "old", "requests": []}).encode() + b"\n")
    assert json.loads(sock.recv(65536)) == {"ok": False, "restart": True}
    sock.close()
    hits = json.loads(run_kb(env, kb.root, "search", "handover", "--json", check=True).stdout)["hits"]
    assert hits[0]["id"] == "handover"
    assert (kb.root / ".kb" / "daemon.log").read_text().count("ready for") == 2


def test_the_build_identity_is_the_code_and_settings_not_file_times(kb, tmp_path, monkeypatch):
    """Two copies of the same code match (a daemon of one serves the other); a touched file does not
    restart anything; a changed file, kb.toml or embedder setting does."""
    import shutil

    from kbtool.surfaces.daemon import client

    package = Path(client.__file__).parents[2]
    copy = tmp_path / "copy" / "kbtool"
    shutil.copytree(package, copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = (
        "import sys; from pathlib import Path; from kbtool.surfaces.daemon.client import build_id; "
        "print(build_id(Path(sys.argv[1])))"
    )

    def identity(folder: Path) -> str:
        out = subprocess.run(
            [sys.executable, "-P", "-c", probe, str(kb.root)],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(folder.parent)},
            check=True,
        )
        return out.stdout.strip()

    original = identity(package)
    assert identity(copy) == original
    os.utime(copy / "search" / "ranking.py", ns=(1, 1))
    assert identity(copy) == original
    (copy / "search" / "ranking.py").write_text((copy / "search" / "ranking.py").read_text() + "\n# changed\n")
    assert identity(copy) != original
    assert client.build_id(kb.root) == original
    monkeypatch.setenv("KB_EMBED_PRECISION", "fp32")
    assert client.build_id(kb.root) != original
    monkeypatch.delenv("KB_EMBED_PRECISION")
    monkeypatch.setenv("KB_EMBED_RUNTIME", "torch")  # a daemon on the other runtime is not this one
    assert client.build_id(kb.root) != original
    monkeypatch.delenv("KB_EMBED_RUNTIME")
    (kb.root / "kb.toml").write_text((kb.root / "kb.toml").read_text() + "\n")
    assert client.build_id(kb.root) != original


def test_in_process_when_asked(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "No daemon?", check=True)
    out = run_kb({**env, "KB_DAEMON": "0"}, kb.root, "search", "daemon", "--json", check=True)
    assert json.loads(out.stdout)["hits"][0]["id"] == "no-daemon"
    assert not socket_path(kb.root).exists()


def test_a_kbtool_folder_in_the_knowledge_base_is_never_imported(kb, env, tmp_path):
    """This repository is a KB that holds kbtool/, and a cloned KB may hold anything: the daemon
    must run the installed kbtool (no restart loop, no in-process fallback) and never the KB's code."""
    marker = tmp_path / "PWNED"
    package = kb.root / "kbtool"
    package.mkdir()
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (package / "daemon.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (package / "surfaces").mkdir()  # where the daemon's module lives now
    (package / "surfaces" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (package / "surfaces" / "daemon.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    run_kb(env, kb.root, "add", "gap", "--title", "Is the daemon safe?", check=True)
    out = run_kb(env, kb.root, "search", "daemon safe", "--json", check=True)
    assert json.loads(out.stdout)["hits"][0]["id"] == "is-the-daemon-safe"
    assert "searching in this process" not in out.stderr, out.stderr
    again = run_kb(env, kb.root, "search", "safe", check=True)
    assert "searching in this process" not in again.stderr
    assert not marker.exists()
    assert (kb.root / ".kb" / "daemon.log").read_text().count("ready for") == 1


def test_list_gaps_and_stats_use_a_running_daemon_and_see_every_write(kb, env):
    run_kb(
        env,
        kb.root,
        "add",
        "gap",
        "--title",
        "Does chunked prefill help at 32k?",
        "--field",
        "priority=high",
        check=True,
    )
    run_kb(
        env,
        kb.root,
        "add",
        "constraint",
        "--title",
        "No post-training",
        "--field",
        "rule=weights stay as released",
        check=True,
    )
    alone = {
        args: run_kb({**env, "KB_DAEMON": "0"}, kb.root, *args, check=True).stdout
        for args in (("list",), ("list", "--json"), ("gaps",), ("stats", "--json"))
    }
    assert not socket_path(kb.root).exists()  # list, gaps and stats never start a daemon
    run_kb(env, kb.root, "search", "prefill", check=True)  # this does
    for args, text in alone.items():
        assert run_kb(env, kb.root, *args, check=True).stdout == text, args
    log = (kb.root / ".kb" / "daemon.log").read_text()
    run_kb({**env, "KB_DAEMON": "0"}, kb.root, "add", "gap", "--title", "Is FP8 KV cache accurate enough?", check=True)
    assert "is-fp8-kv-cache-accurate-enough" in run_kb(env, kb.root, "gaps", check=True).stdout
    assert json.loads(run_kb(env, kb.root, "stats", "--json", check=True).stdout)["open_gaps"] == 2
    assert (kb.root / ".kb" / "daemon.log").read_text() == log  # no second daemon started
    stdout, loaded = modules_loaded_by(["--kb", str(kb.root), "list"], env=env)
    assert (
        "is-fp8-kv-cache-accurate-enough" in stdout and "kbtool.facade.knowledge_base" not in loaded
    )  # the daemon answered it


def test_a_daemon_that_cannot_start_is_said_at_once(kb, env):
    (kb.root / "kb.toml").write_text((kb.root / "kb.toml").read_text() + "\n[kb\n")
    out = run_kb(env, kb.root, "search", "x", check=False)
    assert out.returncode == 2 and "malformed TOML" in out.stderr
    assert "the search daemon exited at start" in out.stderr and "within 60 s" not in out.stderr


def test_clients_that_hang_up_stall_or_send_garbage_do_not_stop_the_daemon(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Still serving?", check=True)
    run_kb(env, kb.root, "search", "serving", check=True)
    log = kb.root / ".kb" / "daemon.log"
    pid = log.read_text().split("kb daemon ")[1].split()[0]
    for payload in (b'{"op": "search", "requests": [{"q": "x"}', b"[1]\n", b"\xff\xfe\n", b""):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(socket_path(kb.root)))
            sock.sendall(payload)  # then hang up without reading the answer
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as stalled:
        stalled.connect(str(socket_path(kb.root)))  # connects, says nothing: dropped after a few seconds
        hits = json.loads(run_kb(env, kb.root, "search", "serving", "--json", check=True).stdout)["hits"]
    assert hits[0]["id"] == "still-serving"
    assert log.read_text().count("ready for") == 1 and f"kb daemon {pid} ready" in log.read_text()


def test_a_daemon_that_dies_mid_query_is_fallen_back_from_and_said(kb, env):
    """What a client sees when the daemon is killed while answering: the connection closes with no
    reply. A listener here stands in for it: it reads the request and hangs up."""
    import threading

    run_kb(env, kb.root, "add", "gap", "--title", "Answered anyway?", check=True)
    path = socket_path(kb.root)
    path.unlink(missing_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def die_mid_query():
        conn, _ = listener.accept()
        conn.recv(1 << 16)
        conn.close()

    dying = threading.Thread(target=die_mid_query)
    dying.start()
    try:
        out = run_kb(env, kb.root, "search", "answered anyway", "--json", check=True)
    finally:
        dying.join(10)
        listener.close()
        path.unlink(missing_ok=True)
    assert json.loads(out.stdout)["hits"][0]["id"] == "answered-anyway"
    assert "searching in this process (the search daemon closed the connection)" in out.stderr


def test_an_index_the_daemon_rebuilds_is_said_to_the_first_client(kb, env):
    run_kb(env, kb.root, "add", "gap", "--title", "Is the rebuild said?", check=True)
    run_kb(env, kb.root, "index", check=True)
    (kb.root / ".kb" / "index.db").write_bytes(b"not a database, " * 512)
    first = run_kb(env, kb.root, "search", "rebuild said", check=True)
    assert "is-the-rebuild-said" in first.stdout
    assert "was unreadable" in first.stderr and "rebuilding it from the cards" in first.stderr, first.stderr
    assert "was unreadable" not in run_kb(env, kb.root, "search", "rebuild said", check=True).stderr  # said once


def daemon_pid(kb) -> int:
    log = (kb.root / ".kb" / "daemon.log").read_text()
    return int(log.rsplit("ready for", 1)[0].rsplit("kb daemon ", 1)[1].split()[0])


def test_a_client_that_drips_its_request_holds_up_no_search(kb, env):
    """A byte every 2 s never lets a per-read timeout fire: the daemon gives each client a deadline for its
    whole request, and reads each on its own, so searches go on meanwhile."""
    import threading

    run_kb(env, kb.root, "add", "gap", "--title", "Served while a client drips?", check=True)
    run_kb(env, kb.root, "search", "drips", check=True)
    heard: list[bytes] = []
    done = threading.Event()

    def drip() -> None:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.connect(str(socket_path(kb.root)))
            sock.settimeout(2)
            for byte in b'{"op": "search", "requests": [' * 10:  # ~600 s at a byte every 2 s
                if done.is_set():
                    return
                try:
                    sock.sendall(bytes([byte]))
                    heard.append(sock.recv(1 << 16))  # the daemon's answer, once it gives up on this client
                    return
                except TimeoutError:
                    continue
                except OSError:
                    return

    dripping = threading.Thread(target=drip)
    dripping.start()
    try:
        out = run_kb(
            env, kb.root, "search", "served while", "--json", check=True
        )  # 120 s timeout; the dripper lasts ~600 s
        assert json.loads(out.stdout)["hits"][0]["id"] == "served-while-a-client-drips"
        assert "searching in this process" not in out.stderr, out.stderr
    finally:
        dripping.join(30)
        done.set()
        dripping.join(5)
    assert heard and b"no whole request within" in heard[0], heard


def test_a_stopped_daemon_is_searched_around(kb, env):
    """A daemon stopped (SIGSTOP) still accepts connections, in its backlog, and answers nothing: the client
    hears no heartbeat, says so and searches in its own process. Once the backlog is full, connecting gives
    up as well (and a fresh daemon takes the socket over)."""
    import signal

    run_kb(env, kb.root, "add", "gap", "--title", "Answered while the daemon is stopped?", check=True)
    run_kb(env, kb.root, "search", "stopped", check=True)
    pid = daemon_pid(kb)
    os.kill(pid, signal.SIGSTOP)
    held: list[socket.socket] = []
    try:
        out = run_kb(env, kb.root, "search", "daemon stopped", "--json", check=True)
        assert json.loads(out.stdout)["hits"][0]["id"] == "answered-while-the-daemon-is-stopped"
        assert "searching in this process (the search daemon said nothing for" in out.stderr, out.stderr
        assert "answered-while-the-daemon-is-stopped" in run_kb(env, kb.root, "gaps", check=True).stdout
        for _ in range(1000):  # fill the stopped daemon's backlog
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.setblocking(False)
            held.append(sock)
            try:
                sock.connect(str(socket_path(kb.root)))
            except BlockingIOError:
                break
        else:
            pytest.fail("the backlog never filled")
        out = run_kb(env, kb.root, "search", "daemon stopped", "--json", check=True)
        assert json.loads(out.stdout)["hits"][0]["id"] == "answered-while-the-daemon-is-stopped"
    finally:
        for sock in held:
            sock.close()
        os.kill(pid, signal.SIGCONT)
        os.kill(pid, signal.SIGTERM)  # its socket may be a successor's now: stop_daemon would not reach it


@pytest.mark.parametrize(
    "payload",
    [
        b"[" * 100_000 + b"]" * 100_000,
        json.dumps({"op": "search", "protocol": PROTOCOL, "build": "x", "requests": [{"query": "x"}]})
        .replace('"x"}', '"x", "where": ' + "[" * 5_000 + "]" * 5_000 + "}")
        .encode(),
        b'{"a": "' + b"[" * 100_000 + b'"}',  # brackets inside a string are text: a JSON object, parsed
    ],
    ids=["bare", "inside-a-request", "inside-a-string"],
)
def test_a_deeply_nested_request_is_refused_and_the_daemon_serves_on(kb, env, payload):
    run_kb(env, kb.root, "add", "gap", "--title", "Still up after a nested request?", check=True)
    run_kb(env, kb.root, "search", "nested", check=True)
    pid = daemon_pid(kb)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(str(socket_path(kb.root)))
        sock.settimeout(30)
        sock.sendall(payload + b"\n")
        reply = json.loads(sock.makefile("rb").readline())
    assert reply["ok"] is False and reply["exit_code"] == 2
    if payload.startswith(b'{"a"'):
        assert reply["error"] == "bad request: not a kb client's message"
    else:
        assert reply["error"] == "bad request: nested deeper than 32 levels"
    out = run_kb(env, kb.root, "search", "still up", "--json", check=True)
    assert json.loads(out.stdout)["hits"][0]["id"] == "still-up-after-a-nested-request"
    assert "searching in this process" not in out.stderr and daemon_pid(kb) == pid
