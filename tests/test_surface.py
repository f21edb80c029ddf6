"""The public surface: exports, layering, help text, docs, and what commands import."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import kbtool
from conftest import REPO_ROOT, modules_loaded_by
from kbtool.surfaces.cli import app

# The architecture: packages in order, and within each package its modules in layers. A module
# may import from an earlier package, or from its own package's earlier layers (or its own layer).
# The facade (kbtool/kb.py) sits between the loop and the surfaces; kbtool/__init__.py and
# __main__.py are the entry points above everything.
ARCHITECTURE: dict[str, list[set[str]]] = {
    "model": [
        {"errors", "evidence_layout", "parsing", "vocabulary"},
        {"cards"},
        {"applicability", "schemas", "validation"},
        {"fields", "markdown", "policy"},
        {"records"},
        {"contracts"},
    ],
    "store": [
        {"config", "files", "git_urls", "interrupts", "locate", "merge", "scratch", "secrets"},
        {"incoming", "repository", "sources"},
        {"history", "sync"},
    ],
    "skills": [{"spec"}, {"bundled", "lock"}, {"scan", "staging"}, {"pack", "registry"}, {"install"}],
    "clients": [{"targets", "config_files"}, {"setup"}],
    "migrations": [{"index"}],  # the index's schema steps (the top-level migrations/ folder)
    "search": [
        {"chunking", "onnx_queries", "vectors", "rerankers"},
        {"embeddings"},
        {"ranking", "evaluation"},
        {"lexical"},
        {"index"},
        {"pipeline"},
    ],
    "loop": [
        {"environment", "evidence", "exchange", "gate_lock", "importer", "load", "provenance", "review"},
        {"curation", "committed_secrets", "exports", "finding_input", "results_tsv", "statistics"},
        {"formats", "plots"},
        {"pairing", "runs"},
        {"repeats"},
        {"gate_compare", "run_evidence"},  # a gate's comparison reads and judges runs as `kb compare` does
        {"gates"},  # runs a gate: its command, or its comparison
    ],
    # the facade a layer a module: each class builds on the one below, KnowledgeBase on them all
    "facade": [
        {"kb_core"},
        {"kb_imports"},
        {"kb_review"},
        {"kb_gates"},
        {"kb_evidence"},
        {"kb_search"},
        {"kb_skills"},
        {"kb"},
        {"reuse"},
    ],
    "web": [{"access", "charts", "render"}, {"views"}, {"app", "site"}],
    "surfaces": [
        {"docs", "mcp", "mcp_prompts", "mcp_tools", "mcp_transports", "operations"},
        {"client"},
        {"cli_base"},
        {"cli_evidence", "cli_gates", "cli_install", "cli_reuse", "cli_search", "cli_skills", "cli_web"},
        {"cli", "daemon"},
    ],
    "entry": [{"__init__", "__main__"}],
}
PACKAGES = list(ARCHITECTURE)


def place(package: str, module: str) -> tuple[int, int]:
    """(the package's rank, the module's layer in it)."""
    layers = ARCHITECTURE[package]
    return PACKAGES.index(package), next(i for i, names in enumerate(layers) if module in names)


def source_files() -> list[tuple[str, str, Path]]:
    """(package, module, path) of every module of kbtool, the migrations included."""
    top = {"__init__": "entry", "__main__": "entry"}
    top.update({module: "facade" for layer in ARCHITECTURE["facade"] for module in layer})
    files = [(top[p.stem], p.stem, p) for p in (REPO_ROOT / "kbtool").glob("*.py")]
    files += [(p.parent.name, p.stem, p) for p in (REPO_ROOT / "kbtool").glob("*/*.py") if p.stem != "__init__"]
    files += [("migrations", p.stem, p) for p in (REPO_ROOT / "migrations").glob("*.py") if p.stem != "__init__"]
    return sorted(files)


def imported(package: str, node: ast.ImportFrom) -> list[tuple[str, str]]:
    """The (package, module) pairs one relative import names, seen from a module of package."""
    top_level = package in ("facade", "entry")
    if node.level == 1 and not top_level:  # from .x import ... / from . import x, y
        return [(package, node.module.split(".")[0])] if node.module else [(package, a.name) for a in node.names]
    if node.module is None and node.level == 2:  # from .. import __version__: the package's own constant
        return []
    if top_level and node.module is None:  # from . import reuse (at the top)
        return [("facade", a.name) for a in node.names]
    parts = (node.module or "").split(".")  # from ..model.cards / from .model.cards (at the top)
    if any(parts[0] in layer for layer in ARCHITECTURE["facade"]):
        return [("facade", parts[0])]
    return [(parts[0], parts[1])] if len(parts) > 1 else [(parts[0], a.name) for a in node.names]


def names_its_whole(package: str, node: ast.ImportFrom, tree: ast.Module) -> bool:
    """A part of the facade may name the class it is part of, KnowledgeBase, for typing alone (under
    `if TYPE_CHECKING:`): a type to annotate with, not a dependency at run time."""
    if package != "facade" or node.module != "kb" or [a.name for a in node.names] != ["KnowledgeBase"]:
        return False
    guards = [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]
    return any(node in ast.walk(guard) for guard in guards)


def test_every_module_has_a_place_and_imports_only_downwards():
    on_disk = {(package, module) for package, module, _ in source_files()}
    declared = {(package, m) for package, layers in ARCHITECTURE.items() for names in layers for m in names}
    assert on_disk == declared, f"undeclared: {on_disk - declared}; gone: {declared - on_disk}"
    for package, module, path in source_files():
        mine = place(package, module)
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level >= 1 and not names_its_whole(package, node, tree):
                for target in imported(package, node):
                    there = place(*target)
                    allowed = there[0] < mine[0] or (there[0] == mine[0] and there[1] <= mine[1])
                    assert allowed, f"{path.relative_to(REPO_ROOT)} imports {'.'.join(target)}, a higher layer"


def test_all_is_what_the_package_exports():
    assert sorted(dir(kbtool)) == sorted(kbtool.__all__)
    assert kbtool.__all__ == sorted([*kbtool._EXPORTS, "open", "init", "__version__"])
    for name in kbtool.__all__:
        assert getattr(kbtool, name) is not None, name
    for module in ("model.cards", "model.errors", "kb", "model.records", "store.repository", "search.embeddings"):
        defined = importlib.import_module(f"kbtool.{module}")
        assert all(
            getattr(kbtool, n) is getattr(defined, n)
            for n in kbtool.__all__
            if hasattr(defined, n) and n in vars(defined)
        )


def _commands(typer_app, prefix=""):
    import typer.main

    group = typer.main.get_command(typer_app)
    for name, command in group.commands.items():
        if hasattr(command, "commands"):
            for sub_name, sub in command.commands.items():
                yield f"{prefix}{name} {sub_name}", sub
        else:
            yield f"{prefix}{name}", command


def test_every_command_has_help_and_is_in_the_cli_reference():
    reference = (REPO_ROOT / "docs" / "cli.md").read_text()
    for name, command in _commands(app):
        assert (command.help or "").strip(), f"kb {name} has no help text"
        assert f"\n### kb {name}\n" in reference and f"\nUsage: kb {name} " in reference, (
            f"kb {name} is missing from docs/cli.md: run `make docs`"
        )
        for param in command.params:
            if param.param_type_name == "option":
                assert (param.help or "").strip(), f"kb {name} {param.opts[0]} has no help text"


def test_light_commands_never_import_torch_or_the_model_runtime():
    model_runtime = {"torch", "sentence_transformers", "transformers", "mcp"}
    for args in (["--help"], ["list"], ["show", "nvfp4-block"], ["lint"], ["gaps"], ["stats"]):
        _, loaded = modules_loaded_by(["--kb", str(REPO_ROOT), *args])
        assert "kbtool.surfaces.cli" in loaded
        heavy = model_runtime if args[0] in ("lint",) else model_runtime | {"numpy", "sqlite_utils"}
        assert not heavy & loaded, f"kb {' '.join(args)} imported {heavy & loaded}"


def test_python_dash_m_works():
    out = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(REPO_ROOT), "lint"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr


def test_every_package_of_kbtool_is_in_the_wheel():
    """A package left out of pyproject's list works from a checkout and fails in every install."""
    import tomllib

    listed = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    on_disk = {"kbtool"} | {f"kbtool.{p.parent.name}" for p in (REPO_ROOT / "kbtool").glob("*/__init__.py")}
    assert on_disk <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(on_disk - listed)}"
