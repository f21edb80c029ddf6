"""What checking a gate's lock and its standing costs: kb.lock's history walked for tampering (every commit that
changed it, by `kb gate verify`, `kb gate run`, `kb lint`, `kb sync`), and `kb brief`'s gate standings (each
gate's newest sealed run re-verified against the project's files now).

A fresh knowledge base with G command gates, each with its script in gates/<id>/, locked, then relocked R times
(a person's `kb gate relock` after an edit of the script): R x G + G commits touch kb.lock. A project of F
files beside it, one gate run recorded on it.

    .venv/bin/python bench/bench_gates.py [--gates 20,200] [--relocks 20] [--files 2000]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_reads import p50_ms

import kbtool
from kbtool.search.embeddings import HashingEmbedder

CHECK = 'import json\nprint(json.dumps({"tpot_ms": 10.0}))\n'


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def knowledge_base(folder: Path, gates: int, relocks: int) -> kbtool.KnowledgeBase:
    kbtool.init(folder / "kb", name="bench")
    kb = kbtool.open(folder / "kb", embedder=HashingEmbedder())
    ids = []
    for n in range(gates):
        script = kb.root / "gates" / f"g{n}" / "check.py"
        script.parent.mkdir(parents=True)
        script.write_text(CHECK)
        check = {"command": f'"${{KB_PYTHON:-python3}}" "$KB_ROOT/gates/g{n}/check.py"', "metric": "tpot_ms"}
        ids.append(
            kb.add(
                "gate", f"TPOT gate {n}", status="confirmed", values={"check": {**check, "op": "<=", "threshold": 12}}
            ).id
        )
    git(kb.root, "add", "gates")
    git(kb.root, "commit", "-qm", "the gates' scripts")
    kb.lock_gates(ids)
    for r in range(relocks):
        for n, gate in enumerate(ids):
            (kb.root / "gates" / f"g{n}" / "check.py").write_text(CHECK + f"# calibration {r}\n")
            kb.relock_gate(gate, f"calibration {r}")
    return kb


def project(folder: Path, files: int) -> Path:
    root = folder / "project"
    (root / "src").mkdir(parents=True)
    for n in range(files):
        (root / "src" / f"m{n}.py").write_text(f"x = {n}\n")
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "-c", "user.name=b", "-c", "user.email=b@example.invalid", "commit", "-qm", "project")
    (root / "runs").mkdir()
    (root / "runs" / "untracked.json").write_text("{}")
    return root


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gates", default="20,200")
    parser.add_argument("--relocks", type=int, default=20)
    parser.add_argument("--files", type=int, default=2000)
    args = parser.parse_args()
    os.environ.setdefault("KB_DAEMON", "0")
    os.environ["KB_CONFIG_DIR"] = tempfile.mkdtemp()  # the seal's key: this bench's own
    print(f"{'gates':>6} {'lock commits':>13} {'verify ms':>10} {'lint ms':>8} {'brief ms':>9}")
    for gates in [int(g) for g in args.gates.split(",")]:
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            relocks = args.relocks if gates <= 20 else max(1, args.relocks // 10)
            kb = knowledge_base(folder, gates, relocks)
            proj = project(folder, args.files)
            first = sorted(kb.gate_locks())[0]
            kb.run_gate(first, in_dir=proj)
            fresh = kbtool.open(kb.root, embedder=HashingEmbedder())
            assert fresh.verify_gates().ok
            standing = next(g for g in fresh.brief().gates if g.id == first)
            assert standing.met, standing.why  # the run kb made and sealed, on the project as it is
            verify, lint, brief = (
                p50_ms(
                    lambda what=what, root=kb.root: getattr(kbtool.open(root, embedder=HashingEmbedder()), what)(),
                    calls,
                )
                for what, calls in (("verify_gates", 5), ("lint", 3), ("brief", 3))
            )
            commits = gates * (relocks + 1)
            print(f"{gates:>6} {commits:>13} {verify:>10.0f} {lint:>8.0f} {brief:>9.0f}")


if __name__ == "__main__":
    main()
