"""Reliability soak: many writers and readers at once (the CLI and an MCP session together), writers
killed with SIGKILL at random moments, and bad input of every class; after each, the knowledge base
must have lost nothing and hold nothing that never committed.

    .venv/bin/python bench/bench_reliability.py [--writers 6] [--each 12] [--kills 40] [--seed 7]

Prints the reliability table bench/RESULTS.md keeps. Exits 1 if any invariant broke.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import kbtool  # noqa: E402

KB = [sys.executable, "-m", "kbtool"]
ENV = {**os.environ, "KB_EMBEDDER": "hashing", "KB_DAEMON": "0"}


def kb(
    root: Path, *args: str, input: str | None = None, env: dict[str, str] = ENV, prefix: list[str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [*(prefix or []), *KB, "--kb", str(root), *args]
    return subprocess.run(command, capture_output=True, text=True, env=env, input=input)


READ_ONLY_MOUNT = 'mount --bind "$0" "$0" && mount -o remount,bind,ro "$0" && exec "$@"'


def read_only_prefix(root: Path) -> list[str] | None:
    """A command prefix under which root is a read-only mount (a user namespace), or None where there is none."""
    prefix = ["unshare", "-rm", "sh", "-c", READ_ONLY_MOUNT, str(root)]
    try:
        probe = subprocess.run([*prefix, "true"], capture_output=True)
    except OSError:
        return None
    return prefix if probe.returncode == 0 else None


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def invariants(root: Path) -> list[str]:
    """What must hold after anything: the tree is what git committed, lint passes, the index agrees."""
    broken = []
    listed = kb(root, "list", "--json")  # a reader first: it undoes a dead writer's half-done write
    status = git(root, "status", "--porcelain", "--untracked-files=all")
    if status:
        broken.append(f"uncommitted files: {status.splitlines()[:3]}")
    committed = {Path(p).stem for p in git(root, "ls-files", "kb").split() if p.endswith(".md")}
    ids = {c["id"] for c in json.loads(listed.stdout or "[]")}
    if ids != committed:
        broken.append(f"list shows {len(ids)} cards, git holds {len(committed)}")
    lint = kb(root, "lint", "--skip", "duplicates", "--skip", "stale")
    if lint.returncode != 0:
        broken.append(f"lint: {lint.stdout.strip().splitlines()[:2]} {lint.stderr.strip()[:200]}")
    if (root / ".git" / "index.lock").exists():
        broken.append("a stale .git/index.lock")
    fsck = subprocess.run(["git", "-C", str(root), "fsck", "--strict"], capture_output=True, text=True)
    if fsck.returncode != 0:
        broken.append(f"git fsck: {fsck.stderr.strip()[:200]}")
    return broken


# --- writers and readers at once --------------------------------------------------------------


def cli_worker(root: Path, n: int, each: int) -> list[subprocess.Popen[str]]:
    """One process per worker: adds, findings, edits of its own cards and searches, interleaved."""
    script = f"""
import subprocess, sys, json
KB = {KB!r}
root, n, each = sys.argv[1], sys.argv[2], int(sys.argv[3])
for i in range(each):
    run = lambda *a: subprocess.run([*KB, "--kb", root, *a], capture_output=True, text=True)
    for out in (
        run("add", "gap", "--title", f"Worker {{n}} question {{i}}?"),
        run("add-finding", "--title", f"Worker {{n}} run {{i}}", "-m", f"tpot={{1 + i}}ms", "-a", f"hardware=H{{n}}"),
        run("edit", f"worker-{{n}}-question-{{i}}", "--field", "priority=high"),
        run("search", f"worker {{n}} run", "-k", "3"),
    ):
        if out.returncode != 0:
            print(f"FAILED {{out.args[4:]}}: {{out.stderr.strip()}}", flush=True)
"""
    return [
        subprocess.Popen(
            [sys.executable, "-c", script, str(root), str(w), str(each)], env=ENV, stdout=subprocess.PIPE, text=True
        )
        for w in range(n)
    ]


async def mcp_worker(root: Path, each: int) -> list[str]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    failures = []
    params = StdioServerParameters(command=sys.executable, args=["-m", "kbtool", "--kb", str(root), "serve"], env=ENV)
    async with Client(params) as client:
        for i in range(each):
            added = await client.call_tool(
                "add_finding",
                {"title": f"Agent run {i}", "metrics": {"ttft": f"{10 + i}ms"}, "applies_to": {"hardware": "B200"}},
            )
            found = await client.call_tool("search", {"query": f"agent run {i}", "k": 3})
            for result in (added, found):
                if result.is_error:
                    failures.append(str(result.content[0].text)[:200])
    return failures


def concurrency(root: Path, writers: int, each: int) -> dict[str, object]:
    start = time.perf_counter()
    before = int(git(root, "rev-list", "--count", "HEAD"))
    procs = cli_worker(root, writers, each)
    mcp_failures = asyncio.run(mcp_worker(root, each))
    outputs = [p.communicate()[0] for p in procs]
    failures = [line for out in outputs for line in out.splitlines() if line.startswith("FAILED")] + mcp_failures
    writes = writers * each * 3 + each  # add, add-finding, edit per step; one MCP add_finding per step
    commits = int(git(root, "rev-list", "--count", "HEAD")) - before
    ids = [c["id"] for c in json.loads(kb(root, "list", "--json").stdout)]
    broken = invariants(root)
    if commits != writes:
        broken.append(f"{writes} writes made {commits} commits")
    if len(ids) != len(set(ids)):
        broken.append("duplicate ids")
    locked = [f for f in failures if "database is locked" in f]
    return {
        "processes": writers + 1,
        "operations": writers * each * 4 + each * 2,
        "writes": writes,
        "commits": commits,
        "failures": failures,
        "database_locked": len(locked),
        "broken": broken,
        "seconds": time.perf_counter() - start,
    }


# --- writers killed ---------------------------------------------------------------------------


def kills(root: Path, n: int, rng: random.Random, docs: Path) -> dict[str, object]:
    """Start a write, SIGKILL it at a random moment, check the invariants, n times."""
    broken: list[str] = []
    landed = 0
    for i in range(n):
        action = rng.choice(["add", "finding", "edit", "import"])
        args = {
            "add": ["add", "gap", "--title", f"Killed write {i}?"],
            "finding": ["add-finding", "--title", f"Killed run {i}", "-m", f"tput={100 + i}tok/s"],
            "edit": ["edit", "worker-0-question-0", "--field", f"priority={rng.choice(['low', 'medium', 'high'])}"],
            "import": ["import", str(docs)],
        }[action]
        proc = subprocess.Popen(
            [*KB, "--kb", str(root), *args], env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        time.sleep(rng.uniform(0.15, 0.9))  # a CLI write takes ~0.6 s, an import longer: before, in and after it
        proc.send_signal(signal.SIGKILL)
        landed += proc.wait() == 0
        found = invariants(root)
        broken += [f"kill {i} ({action}): {b}" for b in found]
    again = kbtool.open(root).import_path(docs)  # an import killed midway completes whole the next time
    pages = len(list(docs.glob("*.md")))
    clone = Path(tempfile.mkdtemp()) / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(clone)], check=True)
    imported = len(list((clone / "kb" / "reference").glob("*.md")))
    if imported != pages:
        broken.append(f"after the killed imports a clone holds {imported} of {pages} imported pages ({again})")
    return {"kills": n, "finished_before_the_kill": landed, "broken": broken}


# --- bad input --------------------------------------------------------------------------------

AWS_EXAMPLE = "AKIAIOSFODNN7EXAMPLE"  # AWS's documented example key


def bad_inputs(root: Path, tmp: Path) -> dict[str, list[tuple[str, bool]]]:
    """Each case must exit 2 with one line on stderr and leave the tree exactly as it was."""
    bomb = tmp / "bomb.md"
    bomb.write_text("---\nid: b\nkind: gap\ntitle: b\nquestion: &a [x, x]\nc: &c [*a, *a]\nd: [*c, *c]\n---\n")
    fifo = tmp / "export.json"
    os.mkfifo(fifo)
    latin = tmp / "latin1.md"
    latin.write_bytes("---\nid: l\nkind: gap\ntitle: Caf\xe9\n---\n".encode("latin-1"))
    outside = tmp / "linked"
    outside.mkdir()
    (outside / "x.md").symlink_to("/etc/hostname")
    export = json.loads((REPO / "tests" / "data" / "aiperf" / "profile_export_aiperf.json").read_text())
    export["time_to_first_token"]["count"] = -3.7
    negative_count = tmp / "profile_export_aiperf.json"
    negative_count.write_text(json.dumps(export))
    gate = ["--field", "check.command=touch ran", "--field", "check.metric=m", "--field", "check.op=>="]
    draft = kb(root, "add", "gate", "--title", "A proposed gate", *gate, "--field", "check.threshold=1").stdout.strip()
    classes = {
        "frontmatter": [
            ["add", "gap", "--from-file", str(bomb)],
            ["add", "gap", "--from-file", str(latin)],
            ["add", "gap", "--title", "x", "--field", "priority=urgent"],
            [
                "add",
                "gate",
                "--title",
                "g",
                "--field",
                "check.command=true",
                "--field",
                "check.metric=m",
                "--field",
                "check.op=>=",
                "--field",
                "check.threshold=inf",
            ],
        ],
        "ids and paths": [
            ["show", "../../etc/passwd"],
            ["edit", "/etc/passwd", "--title", "x"],
            ["import", str(outside)],
        ],
        "numbers": [
            ["add-finding", "--title", "t", "-m", "tput=1,792tok/s"],
            ["add-finding", "--title", "t", "-m", "t=0x10"],
            ["add-finding", "--title", "t", "-m", "t=nan"],
            ["add-finding", "--title", "t", "-m", "tpot=-3ms"],
            ["add-finding", "--title", "t", "-m", "tpot=3ms", "--repo", str(tmp)],
        ],
        "benchmark files": [
            ["add-finding", "--title", "t", "--from", str(fifo)],
            ["add-finding", "--title", "t", "--from", "/no/such.json"],
            ["add-finding", "--title", "t", "--from", str(negative_count)],
        ],
        "what runs": [["gate", "run", draft]],
        "read-only knowledge base": [
            ["add", "gap", "--title", "Written to a read-only mount?"],
            ["add-finding", "--title", "t", "-m", "tpot=3ms"],
        ],
        "queries": [["search", "x" * 20_000], ["search", ""], ["search", "x", "--mode", "magic"]],
        "secrets": [["add", "gap", "--title", f"Why does {AWS_EXAMPLE} fail?"]],
        "json input": [["add-finding", "--json-input"], ["add-finding", "--json-input"]],
    }
    inputs = {"json input": ['{"title": "x", "colour": 1}', "[1]"]}
    prefixes = {"read-only knowledge base": read_only_prefix(root)}
    if prefixes["read-only knowledge base"] is None:
        del classes["read-only knowledge base"]  # no user namespaces here: tests/process/test_read_only.py says so too
    results: dict[str, list[tuple[str, bool]]] = {}
    for name, cases in classes.items():
        for n, args in enumerate(cases):
            before = (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"))
            out = kb(root, *args, input=inputs.get(name, [None] * len(cases))[n], prefix=prefixes.get(name))
            lines = out.stderr.strip().splitlines()
            ok = out.returncode == 2 and len(lines) == 1 and "internal error" not in out.stderr
            ok = ok and (git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain")) == before
            results.setdefault(name, []).append((" ".join(args)[:60], ok))
    return results


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--writers", type=int, default=6)
    parser.add_argument("--each", type=int, default=12)
    parser.add_argument("--kills", type=int, default=40)
    parser.add_argument("--seed", type=int, default=7)
    options = parser.parse_args()
    rng = random.Random(options.seed)
    tmp = Path(tempfile.mkdtemp(prefix="kb-soak-"))
    root = tmp / "kb"
    kbtool.init(root, name="soak")
    docs = tmp / "docs"
    docs.mkdir()
    for n in range(150):
        (docs / f"page{n}.md").write_text(f"# Page {n}\n\nMeasured thing number {n}, at concurrency {n % 64}.\n")

    together = concurrency(root, options.writers, options.each)
    print(
        f"writers and readers at once: {together['processes']} processes ({options.writers} CLI workers + 1 MCP "
        f"session), {together['operations']} operations, {together['writes']} writes -> {together['commits']} commits, "
        f"{len(together['failures'])} failed calls ({together['database_locked']} 'database is locked'), "
        f"{len(together['broken'])} invariants broken, {together['seconds']:.0f} s"
    )
    for line in together["failures"][:5] + together["broken"]:
        print(f"  {line}")
    killed = kills(root, options.kills, rng, docs)
    print(
        f"writers killed with SIGKILL: {killed['kills']} (add, add-finding, edit, import of 150 pages; "
        f"{killed['finished_before_the_kill']} had finished), {len(killed['broken'])} invariants broken"
    )
    for line in killed["broken"]:
        print(f"  {line}")
    bad = bad_inputs(root, tmp)
    total = sum(len(v) for v in bad.values())
    held = sum(ok for v in bad.values() for _, ok in v)
    print(f"bad input: {held} of {total} refused in one line with exit 2 and nothing written")
    for name, cases in bad.items():
        print(
            f"  {name}: {sum(ok for _, ok in cases)}/{len(cases)}"
            + "".join(f"\n    FAILED {a}" for a, ok in cases if not ok)
        )
    clean = not together["broken"] and not together["failures"] and not killed["broken"] and held == total
    sys.exit(0 if clean else 1)


if __name__ == "__main__":
    main()
