"""A team server under many agents: `kb serve --http` on loopback, 32 MCP clients at once.

    .venv/bin/python bench/bench_team_server.py [--agents 32] [--seconds 60] [--write-every 5] [--hashing]

On a fresh clone of this repository (the starter knowledge base, indexed first), one `kb serve --http
127.0.0.1:0` process serves AGENTS concurrent MCP SDK clients, each its own connection carrying the
bearer token, for SECONDS: each agent searches (a distinct query each time), gets a card its last search
found, and every WRITE_EVERY-th call records a finding (one commit). It prints p50 and p99 per tool,
the calls made, what failed and why, and then checks what a team relies on: every write acknowledged is
a commit and a card file at HEAD (none lost, none doubled), no "database is locked" anywhere, and the
server's resident memory sampled through the run (flat, or growing with the cards written).
The clients run in this process, so they share the machine's cores with the server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import secrets
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp_workload import TEAM_TOPICS, until_semantic

REPO = Path(__file__).resolve().parent.parent


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def cpu_seconds(pid: int) -> float:
    """User and system time of the process so far, with its children's it waited for (git)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


class Sampler(threading.Thread):
    """The server's resident memory every half second, with when."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.samples: list[tuple[float, float]] = []  # (seconds into the run, RSS in MiB)
        self.started, self.cpu_at_start = time.monotonic(), cpu_seconds(pid)
        self.cpu = 0.0  # the server's CPU seconds during the run

    def run(self) -> None:
        while not self.stop.wait(0.5):
            try:
                self.samples.append((time.monotonic() - self.started, rss_mib(self.pid)))
                self.cpu = cpu_seconds(self.pid) - self.cpu_at_start
            except OSError:
                return


class Agent:
    """One MCP client: its calls as (tool, seconds, error or None), and the ids of the findings it wrote."""

    def __init__(self, number: int, write_every: int):
        self.number, self.write_every = number, write_every
        self.calls: list[tuple[str, float, str | None]] = []
        self.written: list[str] = []

    async def call(self, client: Client, tool: str, args: dict[str, Any]) -> Any:
        started = time.perf_counter()
        try:
            result = await client.call_tool(tool, args)
        except Exception as exc:  # a transport failure (429, a dropped connection): counted, and the agent goes on
            self.calls.append((tool, time.perf_counter() - started, f"{type(exc).__name__}: {exc}"))
            return None
        error = getattr(result.content[0], "text", "an error") if result.is_error else None
        self.calls.append((tool, time.perf_counter() - started, error))
        return None if result.is_error else result.structured_content

    async def run(self, url: str, token: str, until: float) -> None:
        headers = {"Authorization": f"Bearer {token}"}
        async with (
            httpx2.AsyncClient(headers=headers, timeout=300) as http,
            Client(streamable_http_client(url, http_client=http)) as client,
        ):
            found: list[str] = []
            n = 0
            while time.monotonic() < until:
                n += 1
                if n % self.write_every == 0:
                    title = f"Agent {self.number} run {n}: decode at {100 + n} tok/s on the B200"
                    metrics = {"output_throughput": f"{100 + n}tok/s"}
                    added = await self.call(client, "add_finding", {"title": title, "metrics": metrics})
                    if added:
                        self.written.append(added["id"])
                elif n % 2 or not found:
                    query = f"{TEAM_TOPICS[(n + self.number) % len(TEAM_TOPICS)]} agent {self.number} step {n}"
                    hits = await self.call(client, "search", {"query": query, "k": 5})
                    found = [h["id"] for h in (hits or {}).get("hits", []) if h["kind"] != "skill"] or found
                else:
                    await self.call(client, "get", {"id": found[n % len(found)]})


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def warm_up(url: str) -> None:
    """The run starts once the server's model is loaded (a vector search answers from it)."""
    async with Client(url) as client:
        await until_semantic(client, {"query": "warm-up"})


async def drive(url: str, token: str, agents: list[Agent], seconds: float) -> float:
    until = time.monotonic() + seconds
    started = time.perf_counter()
    await asyncio.gather(*(agent.run(url, token, until) for agent in agents))
    return time.perf_counter() - started


def clients_cpu() -> float:
    """This process's CPU seconds: the agents' MCP clients, which share the cores with the server."""
    return time.process_time()


def start_server(clone: Path, env: dict[str, str], token: str, log: Path) -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "kbtool", "--kb", str(clone), "serve", "--http", "127.0.0.1:0", "--token", token]
    proc = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    if "serving MCP at " not in line:
        raise SystemExit(f"kb serve did not start: {line}{proc.stderr.read()}")

    def keep_log() -> None:  # the rest of its stderr, read so it never blocks, kept to search afterwards
        with log.open("w") as out:
            for rest in proc.stderr:  # type: ignore[union-attr]
                out.write(rest)

    threading.Thread(target=keep_log, daemon=True).start()
    return proc, line.split("serving MCP at ", 1)[1].split()[0]


def report(
    agents: list[Agent], elapsed: float, clone: Path, commits_before: int, sampler: Sampler, log: Path, clients: float
) -> int:
    calls = [c for a in agents for c in a.calls]
    print(f"{len(agents)} agents, {elapsed:.0f} s: {len(calls)} calls, {len(calls) / elapsed:.1f} calls/s in all")
    for tool in ("search", "get", "add_finding"):
        took = [t for name, t, error in calls if name == tool and error is None]
        failed = sum(1 for name, _, error in calls if name == tool and error is not None)
        if took:
            p50, p99 = statistics.median(took) * 1000, percentile(took, 0.99) * 1000
            print(f"  {tool:12} {len(took):6} ok, {failed} failed   p50 {p50:7.1f} ms   p99 {p99:7.1f} ms")
    errors = sorted({error for _, _, error in calls if error})
    for error in errors[:10]:
        print(f"  failure: {error[:200]}")
    written = [i for a in agents for i in a.written]
    commits = int(git(clone, "rev-list", "--count", "HEAD")) - commits_before
    at_head = set(git(clone, "ls-tree", "-r", "--name-only", "HEAD", "kb/finding").split())
    missing = [i for i in written if f"kb/finding/{i}.md" not in at_head]
    locked = [e for e in errors if "locked" in e] + re.findall(r".*database is locked.*", log.read_text())
    print(
        f"  writes acknowledged: {len(written)}; commits made: {commits}; not a file at HEAD: {len(missing)}; "
        f"distinct ids: {len(set(written))}; 'database is locked': {len(locked)}"
    )
    print(
        f"  CPU in {elapsed:.0f} s: the server {sampler.cpu:.0f} s ({sampler.cpu / elapsed:.2f} cores, git included), "
        f"the agents' clients {clients:.0f} s ({clients / elapsed:.2f} cores)"
    )
    rss = sampler.samples
    if rss:
        tenth = next(m for t, m in rss if t >= rss[-1][0] * 0.1)
        middle = next(m for t, m in rss if t >= rss[-1][0] * 0.5)
        print(
            f"  server memory (RSS): {tenth:.0f} MiB at 10% of the run, {middle:.0f} MiB at half, "
            f"{rss[-1][1]:.0f} MiB at the end, {max(m for _, m in rss):.0f} MiB at most"
        )
    healthy = commits == len(written) == len(set(written)) and not missing and not locked
    print("  every write committed, none lost: " + ("yes" if healthy else "NO"))
    return 0 if healthy else 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--agents", type=int, default=32)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--write-every", type=int, default=5, help="every Nth call of an agent is a write")
    parser.add_argument("--hashing", action="store_true", help="the hashing embedder instead of the real model")
    args = parser.parse_args()
    env = {**os.environ, "KB_DAEMON": "0"}
    if args.hashing:
        env["KB_EMBEDDER"] = "hashing"
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        git(clone, "config", "user.name", "bench")
        git(clone, "config", "user.email", "bench@example.invalid")
        subprocess.run([sys.executable, "-m", "kbtool", "--kb", str(clone), "index"], env=env, check=True)
        token = secrets.token_urlsafe(24)
        log = Path(tmp) / "serve.log"
        proc, url = start_server(clone, env, token, log)
        try:
            asyncio.run(warm_up(url))
            sampler = Sampler(proc.pid)
            sampler.start()
            commits_before = int(git(clone, "rev-list", "--count", "HEAD"))
            agents = [Agent(n, args.write_every) for n in range(args.agents)]
            clients = clients_cpu()
            elapsed = asyncio.run(drive(url, token, agents, args.seconds))
            clients = clients_cpu() - clients
            sampler.stop.set()
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        return report(agents, elapsed, clone, commits_before, sampler, log, clients)


if __name__ == "__main__":
    sys.exit(main())
