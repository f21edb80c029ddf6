"""The public surface: exports, layering, help text, docs, and what commands import."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys

import kbtool
from conftest import REPO_ROOT, modules_loaded_by
from kbtool.cli import app

# Each module may import only modules of a lower layer (or its own).
LAYERS = [
    {"errors", "vocabulary"},
    {"cards"},
    {"validation", "locate", "embeddings", "onnx_queries", "review"},
    {
        "markdown",
        "fields",
        "config",
        "schemas",
        "records",
        "search",
        "evaluation",
        "findings",
        "gates",
        "skills",
        "docs",
        "policy",
        "contracts",
    },
    {
        "store",
        "curation",
        "chunking",
        "importer",
        "registry",
        "finding_input",
        "operations",
        "lexical",
        "vectors",
        "formats",
    },
    {"migrations", "index"},
    {"retrieval"},
    {"kb"},
    {"client"},
    {"mcp_server"},
    {"cli", "daemon", "__init__", "__main__"},
]


def layer_of(module: str) -> int:
    return next(i for i, names in enumerate(LAYERS) if module in names)


def test_every_module_has_a_layer_and_imports_only_downwards():
    for path in sorted((REPO_ROOT / "kbtool").glob("*.py")):
        mine = layer_of(path.stem)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                target = node.module.split(".")[0]
                assert layer_of(target) <= mine, f"{path.name} imports {target}, a higher layer"


def test_all_is_what_the_package_exports():
    assert sorted(dir(kbtool)) == sorted(kbtool.__all__)
    assert kbtool.__all__ == sorted([*kbtool._EXPORTS, "open", "init", "__version__"])
    for name in kbtool.__all__:
        assert getattr(kbtool, name) is not None, name
    for module in ("cards", "errors", "kb", "records", "store", "embeddings"):
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


def test_every_command_has_help_and_is_in_the_readme():
    readme = (REPO_ROOT / "README.md").read_text()
    for name, command in _commands(app):
        assert (command.help or "").strip(), f"kb {name} has no help text"
        assert f"`kb {name}" in readme, f"kb {name} is missing from the README's CLI reference"
        for param in command.params:
            if param.param_type_name == "option":
                assert (param.help or "").strip(), f"kb {name} {param.opts[0]} has no help text"


def test_light_commands_never_import_torch_or_the_model_runtime():
    model_runtime = {"torch", "sentence_transformers", "transformers", "mcp"}
    for args in (["--help"], ["list"], ["show", "nvfp4-block"], ["lint"], ["gaps"], ["stats"]):
        _, loaded = modules_loaded_by(["--kb", str(REPO_ROOT), *args])
        assert "kbtool.cli" in loaded
        heavy = model_runtime if args[0] in ("lint",) else model_runtime | {"numpy", "sqlite_utils"}
        assert not heavy & loaded, f"kb {' '.join(args)} imported {heavy & loaded}"


def test_python_dash_m_works():
    out = subprocess.run(
        [sys.executable, "-m", "kbtool", "--kb", str(REPO_ROOT), "lint"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
