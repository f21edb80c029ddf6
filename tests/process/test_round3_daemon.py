"""The kb process against what round three of the adversarial runs found (issue 43): the search daemon against
another local user (item 4), `kb daemon stop --all` against processes that only look like daemons, the hooks
against input they cannot read (item 9), and Ctrl-C at any moment of a kb process (Lows). Real daemons started by
real `kb search` processes; the other user is uid 65534 (nobody), played by a child process that drops to it,
where the tests run as root; each fault bounded to seconds."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import run_kb
from kbtool.store import daemons
from kbtool.surfaces.daemon import client
from kbtool.surfaces.daemon.client import socket_path, stop_daemon

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="playing another user takes root")


@pytest.fixture
def env(tmp_path, monkeypatch):
    """kb subprocesses that start daemons, with a runtime folder and a daemon registry of this test's own."""
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    cache = tmp_path / "cache"
    for name, value in (("XDG_RUNTIME_DIR", str(runtime)), ("KB_CACHE_DIR", str(cache))):
        monkeypatch.setenv(name, value)  # this process computes the same paths
    environment = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON_IDLE": "30"}
    environment.pop("KB_DAEMON", None)
    yield environment
    for entry in daemons.all_running():
        daemons.terminate(entry)


def make_kb(env: dict[str, str], root: Path) -> Path:
    assert run_kb(env, root.parent, "init", str(root)).returncode == 0
    assert run_kb(env, root, "add", "gap", "--title", "Is chunked prefill faster at 32k?").returncode == 0
    return root


def long_root(tmp_path: Path) -> Path:
    """A knowledge base whose .kb/daemon.sock is too long for a unix socket address: the fallback is used."""
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    deep.mkdir(parents=True)
    return deep / "kb"


def search(env: dict[str, str], root: Path) -> subprocess.CompletedProcess[str]:
    return run_kb(env, root, "search", "chunked prefill", "--json")


def hit_ids(out: subprocess.CompletedProcess[str]) -> list[str]:
    assert out.returncode == 0, out.stderr
    return [hit["id"] for hit in json.loads(out.stdout)["hits"]]


# --- item 4: the fallback socket ------------------------------------------------------------------------------


def test_the_fallback_socket_lives_in_a_folder_of_this_user_alone(env, tmp_path):
    root = make_kb(env, long_root(tmp_path))
    assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]
    path = socket_path(root)
    assert path.exists() and path.parent == tmp_path / "run" / "kb", path
    folder = path.parent.lstat()
    assert folder.st_uid == os.geteuid() and stat.S_IMODE(folder.st_mode) == 0o700
    assert stat.S_IMODE(path.lstat().st_mode) & 0o077 == 0  # the socket itself: this user's only
    assert stop_daemon(root)


def test_without_a_runtime_folder_it_is_a_private_folder_in_tmp(env, tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    path = socket_path(long_root(tmp_path) / "kb")
    assert path.parent == Path("/tmp") / f"kb-{os.geteuid()}", path
    folder = path.parent.lstat()
    assert stat.S_ISDIR(folder.st_mode) and folder.st_uid == os.geteuid() and folder.st_mode & 0o077 == 0


@pytest.mark.parametrize("mode", [0o777, 0o750, 0o705])
def test_a_fallback_folder_others_can_enter_is_refused_and_the_search_runs_here(env, tmp_path, mode):
    root = make_kb(env, long_root(tmp_path))
    squat = tmp_path / "run" / "kb"
    squat.mkdir()
    squat.chmod(mode)
    out = search(env, root)
    assert hit_ids(out) == ["is-chunked-prefill-faster-at-32k"]
    assert "searching in this process" in out.stderr and str(squat) in out.stderr, out.stderr
    assert list(squat.iterdir()) == [] and daemons.running(root) is None  # no socket there, no daemon started


def test_a_link_in_place_of_the_fallback_folder_is_refused(env, tmp_path):
    root = make_kb(env, long_root(tmp_path))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (tmp_path / "run" / "kb").symlink_to(elsewhere)
    out = search(env, root)
    assert hit_ids(out) == ["is-chunked-prefill-faster-at-32k"] and "searching in this process" in out.stderr
    assert list(elsewhere.iterdir()) == []


@as_root
def test_a_fallback_folder_of_another_user_is_refused(env, tmp_path):
    root = make_kb(env, long_root(tmp_path))
    squat = tmp_path / "run" / "kb"
    squat.mkdir(mode=0o700)
    os.chown(squat, NOBODY, NOBODY)
    out = search(env, root)
    assert hit_ids(out) == ["is-chunked-prefill-faster-at-32k"]
    assert f"uid {NOBODY}" in out.stderr and "searching in this process" in out.stderr, out.stderr
    assert list(squat.iterdir()) == []


SQUATTER = textwrap.dedent(
    """
    import json, os, socket, sys
    path, heard = sys.argv[1], sys.argv[2]
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    os.chmod(path, 0o777)
    out = open(heard, "ab", buffering=0)  # opened as root: the folders above are root's alone
    os.setgid(65534)
    os.setuid(65534)  # before listen(): the kernel gives clients the credentials of who listened
    server.listen(8)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        conn.settimeout(2)
        try:
            data = conn.recv(1 << 20)
        except OSError:
            data = b""
        out.write(data)
        reply = {"ok": False, "error": "SQUATTED: a fake answer", "exit_code": 1}
        try:
            conn.sendall(json.dumps(reply).encode() + b"\\n")
        except OSError:
            pass
        conn.close()
    """
)


@as_root
def test_a_socket_another_user_listens_on_is_never_asked(env, tmp_path):
    """What item 4 found: another user's process at the daemon's address reads the queries and answers them."""
    root = make_kb(env, tmp_path / "kb")
    path = socket_path(root)
    heard = tmp_path / "heard"
    heard.touch()
    squatter = subprocess.Popen(
        [sys.executable, "-c", SQUATTER, str(path), str(heard)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert squatter.stdout is not None and squatter.stdout.readline().strip() == "ready"
        out = search(env, root)
        assert hit_ids(out) == ["is-chunked-prefill-faster-at-32k"]
        assert "SQUATTED" not in out.stdout + out.stderr
        assert f"uid {NOBODY}" in out.stderr and "searching in this process" in out.stderr, out.stderr
        assert heard.read_bytes() == b""  # it never heard the query
        assert path.exists()  # and kb removed nothing of another user's
    finally:
        squatter.kill()
        squatter.wait()


def test_the_client_checks_who_listens(env, tmp_path, monkeypatch):
    """The same check where the tests cannot be another user: the client takes itself for another uid, so the
    real daemon (of the real uid) is someone else to it."""
    root = make_kb(env, tmp_path / "kb")
    assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]  # a daemon of this user now runs
    assert daemons.running(root) is not None
    real = os.geteuid()
    monkeypatch.setattr(os, "geteuid", lambda: real + 1)
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    with pytest.raises(client.DaemonUnavailable, match=f"uid {real}"):
        client._ask(root, {"op": "search", "requests": [{"query": "chunked prefill"}]})
    monkeypatch.setattr(os, "geteuid", lambda: real)
    assert stop_daemon(root)


CLIENT_AS_NOBODY = textwrap.dedent(
    """
    import json, os, socket, sys
    os.chdir(os.path.dirname(sys.argv[1]))  # before dropping root: the folders above are root's alone
    os.setgid(65534)
    os.setuid(65534)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(10)
    sock.connect(os.path.basename(sys.argv[1]))
    got = b""
    try:
        sock.sendall(sys.argv[2].encode() + b"\\n")  # a daemon that closed at once: a broken pipe
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            got += data
    except OSError:
        pass
    print(json.dumps(got.decode()))
    """
)


@as_root
def test_the_daemon_answers_no_client_of_another_user(env, tmp_path):
    root = make_kb(env, tmp_path / "kb")
    assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]
    path = socket_path(root)
    path.chmod(0o777)  # as a permissive umask would have left it
    request = {
        "op": "search",
        "requests": [{"query": "chunked prefill"}],
        "protocol": client.PROTOCOL,
        "build": client.build_id(root),
        "root": str(root),
    }
    started = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", CLIENT_AS_NOBODY, str(path), json.dumps(request)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "chunked" not in json.loads(out.stdout), out.stdout  # no answer, not even an error naming the query
    assert time.monotonic() - started < 5
    assert f"uid {NOBODY}" in (root / ".kb" / "daemon.log").read_text()
    assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]  # it serves this user on


# --- Low: kb daemon stop --all ----------------------------------------------------------------------------------


def plant_entry(root: Path, pid: int, started: float | None = None) -> Path:
    """A registry entry naming pid as the daemon of root, as a stale one (a pid reused) or a planted one reads."""
    path = daemons.entry_path(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    when = time.time() if started is None else started
    path.write_text(json.dumps({"pid": pid, "root": str(root), "socket": "/nowhere.sock", "started": when}))
    return path


def bystander(*words: str) -> subprocess.Popen[bytes]:
    """A process of this user that is no kb daemon, whose command line holds words."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *words])


@pytest.mark.parametrize(
    "words",
    [
        ["kbtool.surfaces.daemon.server"],  # the module's name anywhere in its command line
        ["-m", "kbtool.surfaces.daemon.server"],
    ],
)
def test_stop_all_signals_no_process_that_only_looks_like_a_daemon(env, tmp_path, words):
    root = tmp_path / "kb"
    other = bystander(*words, str(root))
    try:
        time.sleep(0.2)
        entry = plant_entry(root, other.pid)
        started = time.monotonic()
        out = run_kb(env, tmp_path, "daemon", "stop", "--all")
        assert out.returncode == 0 and "no kb search daemon is running" in out.stdout, out.stdout + out.stderr
        assert other.poll() is None, "kb daemon stop --all signalled a process that is no kb daemon"
        assert not entry.exists()  # the entry is stale: cleared
        assert time.monotonic() - started < 10
    finally:
        other.kill()
        other.wait()


def test_a_pid_started_after_its_entry_was_written_is_not_signalled(env, tmp_path):
    """A daemon's exact command line, but a process younger than the entry naming it: the pid was reused (here:
    a real daemon, its entry made to say it was written a minute before the process began)."""
    root = make_kb(env, tmp_path / "kb")
    assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]
    entry = daemons.running(root)
    assert entry is not None
    plant_entry(root, entry.pid, started=entry.started - 60)
    assert daemons.running(root) is None
    out = run_kb(env, tmp_path, "daemon", "stop", "--all")
    assert out.returncode == 0 and "no kb search daemon is running" in out.stdout, out.stdout + out.stderr
    assert daemons.alive(entry.pid)
    plant_entry(root, entry.pid, started=entry.started)
    assert stop_daemon(root) and daemons.wait_gone(entry.pid, 10)


def test_stop_all_still_stops_real_daemons(env, tmp_path):
    roots = [make_kb(env, tmp_path / name) for name in ("one", "two")]
    for root in roots:
        assert hit_ids(search(env, root)) == ["is-chunked-prefill-faster-at-32k"]
    pids = [entry.pid for entry in daemons.all_running()]
    assert len(pids) == 2
    out = run_kb(env, tmp_path, "daemon", "stop", "--all")
    assert out.returncode == 0 and out.stdout.count("stopped the kb search daemon") == 2, out.stdout + out.stderr
    assert not any(daemons.alive(pid) for pid in pids)


# --- item 9: a hook never blocks on input it cannot read ---------------------------------------------------------


def run_hook(root: Path, event: str, given: bytes | None, cwd: Path, **kwargs) -> subprocess.CompletedProcess[bytes]:
    """`kb --kb ROOT hook EVENT` as Claude Code runs it: the hook input on stdin, the agent's folder as cwd."""
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    return subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(root), "hook", event],
        input=given,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=60,
        **kwargs,
    )


def stop_input(**fields: object) -> dict[str, object]:
    return {"session_id": "s", "transcript_path": "/dev/null", "hook_event_name": "Stop", **fields}


UNREADABLE = {
    "nested arrays": b"[" * 200_000 + b"]" * 200_000,
    "nested objects": b'{"a":' * 100_000 + b"1" + b"}" * 100_000,
    "nested inside a valid object": json.dumps(stop_input()).encode()[:-1]
    + b', "x": '
    + b"[" * 50_000
    + b"]" * 50_000
    + b"}",
    "a cwd too long for a path": json.dumps(stop_input(cwd="/" + "a" * 5000)).encode(),
    "a cwd with a component too long": json.dumps(stop_input(cwd="/tmp/" + "b" * 300 + "/x")).encode(),
    "a cwd with a NUL": json.dumps(stop_input(cwd="/tmp/a\u0000b")).encode(),
    "a cwd that is a number": json.dumps(stop_input(cwd=12)).encode(),
    "a cwd that is a file": json.dumps(stop_input(cwd="/etc/hostname")).encode(),
    "not UTF-8": b'{"cwd": "\xff\xfe"}',
    "a lone surrogate": b'{"cwd": "\\ud800"}',
    "not JSON": b"{",
    "JSON that is not an object": b"[1, 2]",
    "nothing": b"",
}


@pytest.mark.parametrize("event", ["stop", "session-start"])
@pytest.mark.parametrize("given", list(UNREADABLE), ids=list(UNREADABLE))
def test_a_hook_given_input_it_cannot_read_lets_the_agent_go_on(kb, tmp_path, event, given):
    """Claude Code reads exit 2 as "block" and any other non-zero exit as a failed hook: input kb cannot read is
    neither. Exit 0, nothing on stdout (no decision), one line on stderr saying why."""
    out = run_hook(kb.root, event, UNREADABLE[given], tmp_path)
    assert out.returncode == 0, out.stderr.decode(errors="replace")[-400:]
    assert out.stdout in (b"",) or event == "session-start" and out.stdout.startswith(b"{"), out.stdout[:200]
    assert b"Traceback" not in out.stderr and out.stderr.count(b"\n") <= 1, out.stderr[-400:]


def test_a_hook_whose_stdin_cannot_be_read_lets_the_agent_go_on(kb, tmp_path):
    write_only = os.open(tmp_path / "out", os.O_WRONLY | os.O_CREAT)  # reading it fails (EBADF)
    try:
        out = run_hook(kb.root, "stop", None, tmp_path, stdin=write_only)
    finally:
        os.close(write_only)
    assert out.returncode == 0 and out.stdout == b"", out.stderr
    assert out.stderr.startswith(b"kb hook stop: ") and out.stderr.count(b"\n") == 1, out.stderr


def test_a_hook_given_a_flood_reads_a_bounded_amount_and_lets_the_agent_go_on(kb, tmp_path):
    flood = json.dumps(stop_input(cwd=str(tmp_path), pad="x" * (40 << 20))).encode()
    started = time.monotonic()
    out = run_hook(kb.root, "stop", flood, tmp_path)
    assert out.returncode == 0 and out.stdout == b"" and b"kb hook stop: " in out.stderr, out.stderr[-300:]
    assert time.monotonic() - started < 30


def test_a_hook_with_readable_input_still_answers(kb, tmp_path):
    """The guard changes nothing for input it can read: the session start adds the brief."""
    given = json.dumps(
        {"session_id": "s", "hook_event_name": "SessionStart", "source": "startup", "cwd": str(tmp_path)}
    )
    out = run_hook(kb.root, "session-start", given.encode(), tmp_path)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["hookSpecificOutput"]["hookEventName"] == "SessionStart"


# --- Low: a Ctrl-C at any moment of a kb process is exit 130 and one line ----------------------------------------

# `kb ARGS` run as `python -m kbtool` is, after sending itself SIGINT at one moment of its life (a hook in the process,
# so the moment is exact however loaded the machine is): while kb's modules load, as the command exits, as the
# interpreter shuts down.
AT_MOMENT = textwrap.dedent(
    """
    import os, signal, sys, runpy
    moment, sys.argv = sys.argv[1], ["kb", *sys.argv[2:]]
    signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C as in a terminal, whatever the suite inherited

    def interrupt():
        os.kill(os.getpid(), signal.SIGINT)

    if moment == "loading":  # as kb's CLI module begins to load, the slow part of the first second
        class Finder:
            def find_spec(self, name, path=None, target=None):
                if name == "kbtool.surfaces.cli":
                    sys.meta_path.remove(self)
                    interrupt()
                return None
        sys.meta_path.insert(0, Finder())
    else:  # as click ends the command (its sys.exit), or once the interpreter runs its exit handlers
        import atexit

        def profile(frame, event, arg):
            if event == "c_call" and getattr(arg, "__name__", None) == "exit" and arg.__module__ == "sys":
                sys.setprofile(None)
                interrupt() if moment == "exiting" else atexit.register(interrupt)  # run before those kb made
        sys.setprofile(profile)
    runpy.run_module("kbtool", run_name="__main__", alter_sys=True)
    """
)


def interrupted_at(moment: str, root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    command = [sys.executable, "-c", AT_MOMENT, moment, "--kb", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, timeout=60)


@pytest.mark.parametrize("moment", ["loading", "exiting", "shutting-down"])
@pytest.mark.parametrize(
    "command", [["list"], ["add", "gap", "--title", "Asked while interrupted?"]], ids=["read", "write"]
)
def test_a_ctrl_c_at_any_moment_is_exit_130_and_one_line(kb, moment, command):
    out = interrupted_at(moment, kb.root, *command)
    assert out.returncode == 130, (out.returncode, out.stderr)
    assert "Traceback" not in out.stderr and "Aborted" not in out.stderr, out.stderr
    lines = out.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kb: interrupted"), out.stderr
    added = (kb.root / "kb" / "gap" / "asked-while-interrupted.md").exists()
    assert ("nothing was committed" in lines[0]) == (not added), out.stderr  # the line says what happened
    if moment == "loading":
        assert not added and out.stdout == ""


# `kb ARGS` as `python -m kbtool` runs it, once Python itself has started (a signal while the interpreter imports its
# site module is Python's to handle, before any of kb exists): it writes a byte to the fd given first.
# Ctrl-C as in a terminal, whatever this suite inherited: a harness run in the background (`make test &`) starts
# every process with SIGINT ignored, and Python then installs no KeyboardInterrupt for it
STARTED = (
    "import os, sys, runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "fd = int(sys.argv[1]); os.write(fd, b'.'); os.close(fd); sys.argv = ['kb', *sys.argv[2:]]; "
    "runpy.run_module('kbtool', run_name='__main__', alter_sys=True)"
)


def test_ctrl_c_at_random_moments_of_a_real_run_is_never_exit_0(kb):
    """As the adversarial runs did it: SIGINT from outside at seeded moments of `kb add`'s first 1.2 s; each that
    lands while the process lives (it is checked not to have exited) must end it with 130 and one line."""
    import random

    env = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}
    rng = random.Random(43)
    landed = 0
    for n in range(8):
        started, tell = os.pipe()
        proc = subprocess.Popen(
            [sys.executable, "-c", STARTED, str(tell), "--kb", str(kb.root), "add", "gap", "--title", f"Question {n}?"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            pass_fds=(tell,),
        )
        os.close(tell)
        os.read(started, 1)
        os.close(started)
        time.sleep(rng.uniform(0.0, 1.2))
        fields = Path(f"/proc/{proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        # alive, not a zombie, and not already exiting (PF_EXITING: os._exit was called and the kernel is tearing the
        # process down, which takes milliseconds; a signal then reaches no code, and the run's status stands)
        signalled = proc.poll() is None and fields[0] != "Z" and not int(fields[6]) & 0x4
        if signalled:
            proc.send_signal(2)
            landed += 1
        _, stderr = proc.communicate(timeout=60)
        if signalled:
            assert proc.returncode == 130 and "Traceback" not in stderr, (n, proc.returncode, stderr)
            assert stderr.count("kb: interrupted") == 1, stderr
        else:
            assert proc.returncode == 0, stderr
    assert landed >= 3  # most moments fall within the run


def test_a_finalizer_failing_as_kb_ends_is_one_line_and_nothing_after_an_interrupt():
    """GitPython's config parser, left half-made by a Ctrl-C, failed in its __del__ as the process ended: Python
    printed "Exception ignored in ..." with a traceback after kb's one line (seen once in the test above)."""
    code = (
        "import sys\nfrom kbtool import __main__ as entry\nasked = sys.argv[1:]\n"
        "class HalfMade:\n    def __del__(self):\n"
        "        raise AttributeError(\"'GitConfigParser' object has no attribute '_read_only'\")\n"
        "sys.argv = ['kb', '--version']\n"
        "try:\n    entry.main()\nexcept SystemExit:\n    pass\n"
        "if asked == ['interrupted']:\n    entry._interrupted.append(True)\n"
        "HalfMade()\n"  # discarded at once: its __del__ fails now
    )
    env = {k: v for k, v in os.environ.items() if k != "KB_DEBUG"}
    for args, said in (([], 1), (["interrupted"], 0)):
        out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
        assert out.stderr.count("\n") == said, out.stderr
        assert not said or out.stderr.startswith("kb: note: ignored AttributeError in HalfMade"), out.stderr
