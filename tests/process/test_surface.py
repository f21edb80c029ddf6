"""The public surface: exports, layering, help text, docs, and what commands import."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import kbtool
from conftest import REPO_ROOT, modules_loaded_by
from kbtool.layout import ARCHITECTURE, PACKAGES, declared, folder, layout_markdown, source_of, summary
from kbtool.surfaces.cli import app

# The architecture (kbtool/layout.py): packages in order, each package's modules in layers. A module may import
# from an earlier package, or from its own package's earlier layers (or its own layer); a subpackage its parent
# names in a layer sits in that layer; a package's __init__ is checked where a package declares it.


def place(package: str, module: str) -> tuple[int, ...]:
    """(the package's rank, the module's layer in it); for a subpackage its parent places, the subpackage's
    place in its parent and then the module's layer in it. An import is allowed to a place not above."""
    layer = next(i for i, names in enumerate(ARCHITECTURE[package]) if module in names)
    parent, _, name = package.rpartition(".")
    if parent in ARCHITECTURE and name in declared(parent):
        return (*place(parent, name), layer)
    return PACKAGES.index(package), layer


def source_files() -> list[tuple[str, str, Path]]:
    """(package, module, path) of every module of kbtool, the migrations included."""
    files = []
    for path in (REPO_ROOT / "kbtool").rglob("*.py"):
        parts = path.relative_to(REPO_ROOT / "kbtool").with_suffix("").parts
        package = ".".join(parts[:-1]) or "entry"
        if parts[-1] != "__init__" or "__init__" in declared(package):
            files.append((package, parts[-1], path))
    files += [("migrations", p.stem, p) for p in (REPO_ROOT / "migrations").glob("*.py") if p.stem != "__init__"]
    return sorted(files)


def imported(node: ast.ImportFrom | ast.Import) -> list[tuple[str, str]]:
    """The (package, module) pairs one import of kbtool names (`from kbtool.model.cards import X`,
    `from kbtool.surfaces.mcp import prompts`, `import kbtool.surfaces.cli.web`)."""
    dotted = [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
    found = []
    for name in dotted:
        parts = name.split(".")
        if parts[0] != "kbtool" or len(parts) == 1:
            continue  # another library, or `from kbtool import X`: the entry point
        inner = parts[1:]
        for cut in range(len(inner), 0, -1):  # the longest declared package the name starts with
            package = ".".join(inner[:cut])
            if package in ARCHITECTURE:
                rest = inner[cut:]
                if rest:
                    found.append((package, rest[0]))
                elif isinstance(node, ast.ImportFrom):
                    modules = declared(package)
                    found += [(package, a.name) for a in node.names if a.name in modules]
                    if not any(a.name in modules for a in node.names):
                        found.append((package, "__init__"))
                else:
                    found.append((package, "__init__"))
                break
    # a subpackage imported by its name (`from kbtool.evidence import formats`) is its __init__
    return [(f"{p}.{m}", "__init__") if f"{p}.{m}" in ARCHITECTURE else (p, m) for p, m in found]


def imports_of(path: Path) -> set[tuple[str, str]]:
    tree = ast.parse(path.read_text())
    return {t for n in ast.walk(tree) if isinstance(n, ast.Import | ast.ImportFrom) for t in imported(n)}


def test_every_module_has_a_place_and_imports_only_downwards():
    on_disk = {(package, module) for package, module, _ in source_files()}
    # a subpackage's modules are on disk in its folder, not as a module of its parent
    placed = {(p, m) for p in ARCHITECTURE for m in declared(p) if f"{p}.{m}" not in ARCHITECTURE}
    assert on_disk == placed, f"undeclared: {on_disk - placed}; gone: {placed - on_disk}"
    for package, module, path in source_files():
        mine = place(package, module)
        for target in imports_of(path):
            if target == (package, module) or target[1] not in declared(target[0]):
                continue  # itself, or a package's __init__ the architecture does not place
            there = place(*target)
            allowed = there <= mine
            assert allowed, f"{path.relative_to(REPO_ROOT)} imports {'.'.join(target)}, a higher layer"


def test_no_import_circle_not_even_for_typing():
    """Imports under `if TYPE_CHECKING:` and inside functions count too: a circle there is still one the
    reader has to hold in their head, and the next refactor turns it into a runtime one."""
    graph = {(package, module): imports_of(path) for package, module, path in source_files()}
    done: set[tuple[str, str]] = set()

    def visit(node: tuple[str, str], trail: list[tuple[str, str]]) -> None:
        if node in trail:
            circle = trail[trail.index(node) :] + [node]
            raise AssertionError("import circle: " + " -> ".join(".".join(n) for n in circle))
        if node in done or node not in graph:
            return
        for target in graph[node]:
            if target != node:
                visit(target, [*trail, node])
        done.add(node)

    for node in graph:
        visit(node, [])


def _python_files() -> set[str]:
    """Every .py file of kbtool and of the top-level migrations/ folder, from the repository's root."""
    paths = [*(REPO_ROOT / "kbtool").rglob("*.py"), *(REPO_ROOT / "migrations").glob("*.py")]
    return {str(p.relative_to(REPO_ROOT)) for p in paths}


def test_the_map_holds_every_module_file_and_itself():
    """The layout the docs show names every file: each module the map places (kbtool/layout.py, the map,
    among them), each package's __init__.py as its introduction, and no folder the map does not know."""
    assert "layout" in declared("entry")
    files = _python_files()
    placed = {source_of(p, m) for p in ARCHITECTURE for m in declared(p)}
    introduced = {f"{folder(p)}/__init__.py" for p in ARCHITECTURE}
    assert files - introduced == placed - introduced, (
        f"not in kbtool/layout.py: {sorted(files - placed - introduced)}; gone: {sorted(placed - files)}"
    )
    assert {f.rpartition("/")[0] for f in files} == {folder(p) for p in ARCHITECTURE}


def test_every_module_says_what_it_is_in_its_docstring_s_first_line():
    """The layout describes a module by its docstring's first line: a short sentence, ended on that line."""
    unclear = [
        f"{name}: {line!r}"
        for name in sorted(_python_files())
        if not (line := summary(REPO_ROOT / name)).endswith(".") or len(line) > 110
    ]
    assert not unclear, "a module docstring's first line is not a short sentence:\n" + "\n".join(unclear)


MODULE_LINES = 600  # a module longer than this does more than one thing: split it where its parts meet


def test_no_module_is_longer_than_600_lines():
    lines = {name: len((REPO_ROOT / name).read_text().splitlines()) for name in _python_files()}
    long = {name: n for name, n in lines.items() if n > MODULE_LINES}
    assert not long, f"over {MODULE_LINES} lines: {long}"


def test_the_layout_in_the_development_docs_is_current():
    """docs/development.md shows the map through cog, as `make lint` checks; pytest alone catches it stale too."""
    page = (REPO_ROOT / "docs" / "development.md").read_text(encoding="utf-8")
    assert "\n".join(layout_markdown(REPO_ROOT)) + "\n<!-- [[[end]]] -->" in page, (
        "the layout in docs/development.md is stale: run `make docs`"
    )


def test_the_facade_is_a_star_not_a_chain():
    """Each part of KnowledgeBase subclasses the core alone; KnowledgeBase composes them."""
    from kbtool.facade.core import KnowledgeBaseCore
    from kbtool.facade.knowledge_base import KnowledgeBase

    parts = KnowledgeBase.__bases__
    assert len(parts) >= 5
    for part in parts:
        assert part.__bases__ == (KnowledgeBaseCore,), f"{part.__name__} builds on {part.__bases__}"


def test_all_is_what_the_package_exports():
    assert sorted(dir(kbtool)) == sorted(kbtool.__all__)
    assert kbtool.__all__ == sorted([*kbtool._EXPORTS, "open", "init", "__version__"])
    for name in kbtool.__all__:
        assert getattr(kbtool, name) is not None, name
    for module in (
        "model.cards",
        "model.errors",
        "facade.knowledge_base",
        "model.records",
        "store.repository",
        "search.embeddings",
    ):
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
    # the first read of a fresh clone builds the keyword index (sqlite_utils, numpy); every later one reads it
    modules_loaded_by(["--kb", str(REPO_ROOT), "list"])
    for args in (
        ["--help"],
        ["list"],
        ["show", "nvfp4-block"],
        ["lint"],
        ["gaps"],
        ["stats"],
        ["status"],
        ["daemon", "status"],
        ["brief"],
    ):
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
    root = REPO_ROOT / "kbtool"
    on_disk = {"kbtool"} | {
        ".".join(("kbtool", *p.parent.relative_to(root).parts)) for p in root.rglob("*/__init__.py")
    }
    assert on_disk <= listed, f"add to pyproject.toml [tool.setuptools] packages: {sorted(on_disk - listed)}"


def test_one_version_source_and_typed_for_its_users():
    """The version lives in kbtool.__version__ alone (pyproject reads it), and the wheel says kbtool is typed
    (PEP 561's py.typed), so a user's mypy checks their calls into kbtool."""
    import tomllib

    pyproject = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())
    assert "version" not in pyproject["project"] and "version" in pyproject["project"]["dynamic"]
    assert pyproject["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "kbtool.__version__"}
    assert (REPO_ROOT / "kbtool" / "py.typed").is_file()
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["kbtool"]
    literal = f'"{kbtool.__version__}"'
    elsewhere = [
        str(p.relative_to(REPO_ROOT))
        for p in (*(REPO_ROOT / "kbtool").rglob("*.py"), REPO_ROOT / "skills" / "kb" / "SKILL.md")
        if p.name != "__init__.py" and literal in p.read_text(encoding="utf-8")
    ]
    assert not elsewhere, f"a second copy of the version: {elsewhere}"


# --- every path of this repository that the docs and the code's comments name exists ---------------------------

NAMED_PATH = re.compile(r"(?<![\w./~-])((?:kbtool|tests|bench|docs|migrations|schemas|\.ci)/[\w./-]*\w)")
# named on purpose though not in a checkout: the wheel's copy of skills/kb (pyproject's package-dir)
NOT_IN_A_CHECKOUT = {"kbtool/kb_skill/SKILL.md"}


def _prose_of(path: Path) -> list[tuple[int, str]]:
    """(line, text) a reader reads as prose: a page or config file whole; of Python, its comments and
    docstrings (a test's string literals are its data, such as a folder it makes)."""
    import io
    import tokenize

    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        return list(enumerate(text.splitlines(), 1))
    out = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        docstring = token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith(('"""', "'''"))
        if token.type == tokenize.COMMENT or docstring:
            out += [(token.start[0] + n, line) for n, line in enumerate(token.string.splitlines())]
    return out


def test_every_path_the_docs_and_comments_name_exists():
    pages = [REPO_ROOT / "README.md", REPO_ROOT / "pyproject.toml", REPO_ROOT / "Makefile"]
    pages += sorted((REPO_ROOT / "docs").glob("*.md"))
    for top in ("kbtool", "tests", "bench", "migrations"):
        pages += sorted((REPO_ROOT / top).rglob("*.py"))
    missing = []
    for page in pages:
        for line_no, line in _prose_of(page):
            for named in NAMED_PATH.findall(line):
                named = named.rstrip(".")
                if named not in NOT_IN_A_CHECKOUT and not (REPO_ROOT / named).exists():
                    missing.append(f"{page.relative_to(REPO_ROOT)}:{line_no}: {named}")
    assert not missing, "\n".join(missing)
