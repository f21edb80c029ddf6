"""`kb status` and `kb daemon status|stop`: the knowledge base, its index and vectors, its search daemon (started
by a real `kb search`), stopping one or all, and the idle timeout kb.toml sets."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

import kbtool
from conftest import git, run_kb
from kbtool.store import daemons
from kbtool.surfaces.daemon.client import socket_path

FIELDS = {"root", "name", "id", "index", "vectors", "daemon", "servers", "sources"}


@pytest.fixture
def env(tmp_path, monkeypatch):
    """kb subprocesses with daemons, their registry in this test's own cache (so --all sees only its own)."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("KB_CACHE_DIR", str(cache))  # this process reads the same registry
    environment = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON_IDLE": "60", "KB_CACHE_DIR": str(cache)}
    environment.pop("KB_DAEMON", None)
    yield environment
    for entry in daemons.all_running():
        daemons.terminate(entry)


def make_kb(env: dict[str, str], root: Path, title: str = "Is chunked prefill faster at 32k?") -> Path:
    assert run_kb(env, root.parent, "init", str(root)).returncode == 0
    assert run_kb(env, root, "add", "gap", "--title", title).returncode == 0
    return root


def status_of(env: dict[str, str], root: Path) -> dict:
    out = run_kb(env, root, "status", "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


def search(env: dict[str, str], root: Path) -> None:
    out = run_kb(env, root, "search", "chunked prefill")
    assert out.returncode == 0 and "chunked" in out.stdout, out.stderr


def test_status_of_a_fresh_knowledge_base(env, tmp_path):
    root = make_kb(env, tmp_path / "fresh")
    report = status_of(env, root)
    assert set(report) == FIELDS
    assert report["name"] == "fresh" and report["root"] == str(root)
    assert report["id"] == kbtool.open(root).kb_id and len(report["id"]) == 32  # made by kb init
    assert report["index"] == {"built": False, "indexed": 0, "on_disk": 1, "to_refresh": 1, "current": False}
    assert report["vectors"]["model"] == "hashing-384" and not report["vectors"]["ready"]
    assert report["daemon"] is None and report["sources"] == []
    assert not (root / ".kb" / "index.db").exists(), "kb status built the index"
    text = run_kb(env, root, "status").stdout
    assert "index: not built" in text and "daemon: none running" in text


def test_status_shows_the_daemon_a_search_started_and_a_stale_index(env, tmp_path):
    root = make_kb(env, tmp_path / "a")
    search(env, root)
    report = status_of(env, root)
    daemon = report["daemon"]
    assert set(daemon) == {"pid", "root", "rss_bytes", "uptime_s"}
    assert daemon["root"] == str(root) and daemons.alive(daemon["pid"])
    assert daemon["rss_bytes"] > 10 << 20 and 0 <= daemon["uptime_s"] < 120
    assert report["index"]["current"] and report["index"]["indexed"] == 1
    vectors = report["vectors"]
    deadline = time.monotonic() + 30  # the daemon embeds in the background
    while not vectors["ready"] and time.monotonic() < deadline:
        time.sleep(0.2)
        vectors = status_of(env, root)["vectors"]
    assert vectors == {"model": "hashing-384", "chunks": 1, "embedded": 1, "ready": True, "note": None}
    (root / "kb" / "gap" / "is-chunked-prefill-faster-at-32k.md").write_text("changed\n", encoding="utf-8")
    assert status_of(env, root)["index"]["to_refresh"] == 1
    text = run_kb(env, root, "status").stdout
    assert f"daemon: pid {daemon['pid']}, " in text and "MB resident" in text and "index: stale: 1 of 1" in text


def test_daemon_stop_ends_the_process_and_its_socket(env, tmp_path):
    root = make_kb(env, tmp_path / "a")
    search(env, root)
    pid = status_of(env, root)["daemon"]["pid"]
    out = run_kb(env, root, "daemon", "stop")
    assert out.returncode == 0 and f"(pid {pid})" in out.stdout, out.stderr
    assert not daemons.alive(pid) and not socket_path(root).exists()
    assert not daemons.entry_path(root).exists()
    assert status_of(env, root)["daemon"] is None
    again = run_kb(env, root, "daemon", "stop")
    assert again.returncode == 0 and "no kb search daemon is running" in again.stdout
    search(env, root)  # the next search starts a fresh one
    assert status_of(env, root)["daemon"]["pid"] != pid


def test_daemon_stop_all_stops_the_daemons_of_every_knowledge_base(env, tmp_path):
    roots = [make_kb(env, tmp_path / name) for name in ("one", "two")]
    for root in roots:
        search(env, root)
    listed = json.loads(run_kb(env, roots[0], "daemon", "status", "--all", "--json").stdout)["daemons"]
    assert sorted(d["root"] for d in listed) == sorted(map(str, roots))
    out = run_kb(env, roots[0], "daemon", "stop", "--all")
    assert out.returncode == 0 and out.stdout.count("stopped the kb search daemon") == 2, out.stdout + out.stderr
    assert not any(daemons.alive(d["pid"]) for d in listed)
    assert not any(socket_path(root).exists() for root in roots)
    every = json.loads(run_kb(env, roots[0], "daemon", "status", "--all", "--json").stdout)
    assert every == {"daemons": [], "servers": []}


def test_a_stale_registry_entry_is_cleared(env, tmp_path):
    root = make_kb(env, tmp_path / "a")
    dead = daemons.entry_path(root)
    dead.parent.mkdir(parents=True)
    # a pid no process holds: past the kernel's pid_max
    dead.write_text(json.dumps({"pid": 2**22 + 1, "root": str(root), "socket": "/nowhere", "started": 0}))
    assert status_of(env, root)["daemon"] is None
    assert not dead.exists()


def test_the_daemon_exits_after_the_idle_time_kb_toml_sets(env, tmp_path):
    root = make_kb(env, tmp_path / "a")
    with (root / "kb.toml").open("a", encoding="utf-8") as config:
        config.write("\n[daemon]\nidle_minutes = 0.02\n")  # 1.2 s
    env = {k: v for k, v in env.items() if k != "KB_DAEMON_IDLE"}
    search(env, root)
    pid = status_of(env, root)["daemon"]["pid"]
    assert daemons.wait_gone(pid, 20), "the daemon outlived its idle time"
    assert not socket_path(root).exists() and not daemons.entry_path(root).exists()
    assert f"kb daemon {pid} idle for 1 s" in (root / ".kb" / "daemon.log").read_text()


@pytest.mark.parametrize(
    "args",
    [["status", "--bogus"], ["daemon", "stop", "--bogus"], ["daemon", "status", "extra"], ["daemon", "restart"]],
)
def test_bad_input_exits_2(env, tmp_path, args):
    root = make_kb(env, tmp_path / "a")
    out = run_kb(env, root, *args)
    assert out.returncode == 2 and out.stdout == "", out.stderr


def test_a_negative_idle_time_is_refused(env, tmp_path):
    root = make_kb(env, tmp_path / "a")
    with (root / "kb.toml").open("a", encoding="utf-8") as config:
        config.write("\n[daemon]\nidle_minutes = -1\n")
    out = run_kb(env, root, "status")
    assert out.returncode == 2 and "daemon.idle_minutes" in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_status_names_each_source_with_its_commit_and_age(env, tmp_path):
    team = make_kb(env, tmp_path / "team", "A team question?")
    root = make_kb(env, tmp_path / "project")
    with (root / "kb.toml").open("a", encoding="utf-8") as config:
        config.write(f'\n[[sources]]\nname = "team"\npath = "{team}"\n\n[[sources]]\nname = "later"\nurl = "{team}"\n')
    commit = git(team, "rev-parse", "HEAD").strip()
    sources = status_of(env, root)["sources"]
    assert sources[0]["name"] == "team" and sources[0]["commit"] == commit and sources[0]["age_days"] == 0
    assert sources[0]["kb_id"] == kbtool.open(team).kb_id and sources[0]["fetched"] is None  # a folder: no fetch
    assert sources[1] == {
        "name": "later",
        "where": str(team),
        "ref": None,
        "commit": None,  # its copy is made by `kb sources update`
        "committed": None,
        "age_days": None,
        "fetched": None,  # never fetched: not copied yet
        "fetched_age_days": None,
        "kb_id": None,  # read from its copy's kb.toml, once there is one
        "vectors": None,  # counted in its copy, once there is one
    }
    assert f"source team: {team} at {commit[:12]}, committed " in run_kb(env, root, "status").stdout
