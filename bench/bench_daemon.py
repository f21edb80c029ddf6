"""The search daemon's memory on the starter KB, as `kb status` reports it (VmRSS from /proc; the peak,
VmHWM, beside it): a fresh clone, a real `kb search` starting the daemon, then

- keyword only: KB_EMBEDDER=hashing, no model runtime in the process (the floor of a daemon);
- with the model: the default all-MiniLM-L6-v2, after the vectors are built and a hybrid search answered
  (what a daemon holds for the rest of its life), on onnxruntime alone (kb's default where it is
  installed) and on PyTorch alone (KB_EMBED_RUNTIME=torch, what an install without onnxruntime runs);
- the seconds from the first `kb search` on the fresh clone until `kb status` says the vectors are ready
  (hybrid search answers from then on).

    .venv/bin/python bench/bench_daemon.py [--runs 3]

Linux only (/proc). The daemons run with this user's cache (the ONNX export is made once per model) and
are stopped at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
KB = [str(Path(sys.executable).parent / "kb")]
QUERY = "NVFP4 MoE decode"
SETTLE_S = 5.0  # after the vectors are ready, before RSS is read: what the background threads still free
MiB = 1 << 20


def kb(root: Path, env: dict[str, str], *args: str) -> str:
    out = subprocess.run([*KB, "--kb", str(root), *args], capture_output=True, text=True, env=env, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"kb {' '.join(args)} failed: {out.stderr}")
    return out.stdout


def memory_of(pid: int) -> tuple[float, float]:
    """(VmRSS, VmHWM) in MiB."""
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024


def one_run(clone: Path, env: dict[str, str], with_model: bool) -> tuple[float, float, float, float]:
    """(status's RSS, VmRSS, VmHWM) in MiB after the daemon settled, and the seconds until vectors were ready."""
    started = time.monotonic()
    kb(clone, env, "search", QUERY, "-k", "5")
    deadline = time.monotonic() + 600
    while True:
        status = json.loads(kb(clone, env, "status", "--json"))
        if status["vectors"]["ready"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    ready = time.monotonic() - started
    kb(clone, env, "search", QUERY, "-k", "5")  # both legs answer now
    if with_model:
        time.sleep(SETTLE_S)
        kb(clone, env, "search", QUERY, "-k", "5")
    daemon = json.loads(kb(clone, env, "status", "--json"))["daemon"]
    rss, hwm = memory_of(daemon["pid"])
    kb(clone, env, "daemon", "stop")
    return daemon["rss_bytes"] / MiB, rss, hwm, ready


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    runs = parser.parse_args().runs
    dropped = ("KB_DAEMON", "KB_EMBEDDER", "KB_DAEMON_IDLE", "KB_EMBED_RUNTIME")
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    setups = {
        "keyword only (KB_EMBEDDER=hashing)": {**base, "KB_EMBEDDER": "hashing"},
        "with the model, onnxruntime": base,
        "with the model, PyTorch (KB_EMBED_RUNTIME=torch)": {**base, "KB_EMBED_RUNTIME": "torch"},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, env in setups.items():
            rows = []
            for n in range(runs):
                clone = Path(tmp) / f"starter-{list(setups).index(name)}-{n}"
                subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
                rows.append(one_run(clone, env, with_model="hashing" not in name))
            reported = [r[0] for r in rows]
            print(
                f"{name}: kb status RSS median {statistics.median(reported):.0f} MiB "
                f"({', '.join(f'{r:.0f}' for r in reported)}); "
                f"VmRSS {statistics.median(r[1] for r in rows):.0f} MiB, "
                f"peak VmHWM {statistics.median(r[2] for r in rows):.0f} MiB; vectors ready after "
                f"{', '.join(f'{r[3]:.1f}' for r in rows)} s"
            )


if __name__ == "__main__":
    main()
