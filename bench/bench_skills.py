"""Skills into agents: the security scan, a bounded knowledge pack, `kb skill install` from git,
`kb agent install` into four clients, and one `kb serve` over two knowledge bases against one.

    .venv/bin/python bench/bench_skills.py [--repeat 5]

The scan runs on the 13 real skills of ../shared/corpus/agent-skills (when present) and this
repository's skills; the pack on 1,020 synthetic cards (half the rules JSON); install and agent
install as subprocesses, end to end, on temporary folders; the servers with the real model, their
resident memory read from /proc once a search has loaded it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "tests" / "process"))  # the test module whose helpers it uses

from mcp_workload import until_semantic  # noqa: E402

from kbtool.skills.pack import estimate_tokens, render_pack  # noqa: E402
from kbtool.skills.scan import scan_skill  # noqa: E402

KB = [sys.executable, "-m", "kbtool"]
CORPUS = REPO.parent / "shared" / "corpus" / "agent-skills"


def median_ms(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def bench_scan(repeat: int) -> None:
    folders = [p for p in sorted(CORPUS.iterdir()) if p.is_dir()] if CORPUS.is_dir() else []
    folders += [p for p in sorted((REPO / "skills").iterdir()) if p.is_dir()]
    files = sum(1 for f in folders for p in f.rglob("*") if p.is_file())
    size = sum(p.stat().st_size for f in folders for p in f.rglob("*") if p.is_file())
    total = median_ms(lambda: [scan_skill(f) for f in folders], repeat)
    findings = sum(len(scan_skill(f)) for f in folders)
    print(f"scan: {len(folders)} skills, {files} files, {size / 1e6:.2f} MB in {total:.0f} ms ({findings} findings)")
    biggest = max(folders, key=lambda f: sum(p.stat().st_size for p in f.rglob("*") if p.is_file()))
    print(f"scan: the largest, {biggest.name}: {median_ms(lambda: scan_skill(biggest), repeat):.0f} ms")


def bench_pack(repeat: int) -> None:
    from test_skills import CHECK, JSON_RULE, _stored

    cards = [_stored("gate", i, status="confirmed", check=CHECK) for i in range(20)]
    for i in range(600):
        rule = JSON_RULE if i % 2 else f"Rule {i}: keep the KV cache in FP8."
        cards.append(_stored("constraint", i, status="confirmed", rule=rule, severity="must" if i < 300 else "should"))
    evidence = [{"metric": "decode_tps", "value": 1120.0, "unit": "tok/s", "baseline": 1000.0}]
    cards += [_stored("finding", i, status="confirmed", claim=f"Decode {i}.", evidence=evidence) for i in range(300)]
    cards += [_stored("failure-mode", i, status="confirmed", symptom="garbage", fix="pad") for i in range(100)]
    files: dict[str, str] = {}

    def run() -> None:
        files.update(render_pack("big-pack", "applies_to.hardware=B200", cards, "team", None, date(2026, 12, 4)))

    took = median_ms(run, repeat)
    body = files["SKILL.md"].split("---\n", 2)[2]
    shown = body.count("\n- [")
    print(
        f"pack: {len(cards)} cards rendered and scanned in {took:.0f} ms; SKILL.md {len(files['SKILL.md']):,} chars, "
        f"~{estimate_tokens(body)} tokens, {shown} card lines"
    )


def run(env: dict[str, str], *args: str, cwd: Path) -> float:
    start = time.perf_counter()
    out = subprocess.run([*KB, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return time.perf_counter() - start


def bench_installs(work: Path) -> None:
    env = {**os.environ, "HOME": str(work / "home"), "KB_DAEMON": "0", "KB_EMBEDDER": "hashing"}
    (work / "home").mkdir()
    source = work / "src"
    (source / "skills").mkdir(parents=True)
    for name in ("profile-decode", "tune-moe", "check-accuracy"):
        (source / "skills" / name).mkdir()
        (source / "skills" / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: A skill for the benchmark. Use when measuring.\n---\n\n# {name}\n"
        )
    for args in (
        ["init", "-q", "-b", "main"],
        ["add", "-A"],
        ["-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "v1"],
    ):
        subprocess.run(["git", *args], cwd=source, check=True)
    subprocess.run(["git", "tag", "v1"], cwd=source, check=True)
    bare = work / "skills.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(bare)], check=True)
    project = work / "project"
    project.mkdir()
    first = run(env, "skill", "install", f"{bare}@v1", cwd=project)
    again = run(env, "skill", "install", f"{bare}@v1", cwd=project)
    verify = run(env, "skill", "verify", cwd=project)
    print(
        f"skill install: 3 skills from a bare git repository @v1 {first:.2f} s, "
        f"again (unchanged) {again:.2f} s; verify {verify:.2f} s"
    )
    clients = ["--claude", "--codex", "--cursor", "--agents"]
    first = run(env, "--kb", str(REPO), "agent", "install", *clients, cwd=project)
    again = run(env, "--kb", str(REPO), "agent", "install", *clients, cwd=project)
    undo = run(env, "agent", "uninstall", *clients, cwd=project)
    print(f"agent install: 4 clients {first:.2f} s, again (unchanged) {again:.2f} s; uninstall {undo:.2f} s")


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def server_pid(marker: str) -> int:
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "serve" in cmdline and marker in cmdline and "kbtool" in cmdline:
                return int(proc.name)
    raise RuntimeError("the server process was not found")


async def one_server(args: list[str], marker: str) -> tuple[float, float]:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    env = {k: v for k, v in os.environ.items() if k not in ("KB_EMBEDDER", "KB_DAEMON")}
    params = StdioServerParameters(command=sys.executable, args=[*KB[1:], "serve", *args, "--read-only"], env=env)
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=900) as client:
        names = [k["name"] for k in (await client.call_tool("kbs", {})).structured_content["kbs"]]
        for name in names:  # a search in each loads the model (once, when it is shared) and each index
            await until_semantic(client, {"query": "NVFP4 MoE decode", "kb": name})
        ready = time.perf_counter() - start
        return ready, rss_mb(server_pid(marker))


def bench_serve(work: Path) -> None:
    team, project = work / "team", work / "proj"
    for target in (team, project):
        subprocess.run(["git", "clone", "-q", str(REPO), str(target)], check=True)
    one = asyncio.run(one_server(["--kb", f"team={team}"], str(team)))
    two = asyncio.run(one_server(["--kb", f"team={team}", "--kb", f"project={project}"], str(project)))
    print(
        f"kb serve, real model, a vector search in each knowledge base: one KB ready in {one[0]:.1f} s at "
        f"{one[1]:.0f} MB resident; two KBs (one model shared) ready in {two[0]:.1f} s at {two[1]:.0f} MB"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--no-serve", action="store_true", help="skip the servers (they embed two clones)")
    args = parser.parse_args()
    print(json.dumps({"python": sys.version.split()[0], "cpus": os.cpu_count()}))
    bench_scan(args.repeat)
    bench_pack(args.repeat)
    with tempfile.TemporaryDirectory(prefix="kb-bench-skills-") as scratch:
        bench_installs(Path(scratch))
        if not args.no_serve:
            bench_serve(Path(scratch))


if __name__ == "__main__":
    main()
