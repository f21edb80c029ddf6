"""The map of kbtool's code: its packages in order, each package's modules in layers.

tests/process/test_surface.py enforces the map (every module placed, every import downwards, no circle), and
docs/development.md shows it through cog (`layout_markdown`), each module described by the first line of
its docstring, read from the source with `ast` so that nothing here imports the code it describes. A new
module is one entry here; the docs follow with `make docs`.
"""

from __future__ import annotations

import ast
from pathlib import Path

# The architecture: packages in order (a subpackage by its dotted path under kbtool), and within each
# package its modules in layers. A module may import from an earlier package, or from its own
# package's earlier layers (or its own layer). The facade is a star: every part is built on the core
# alone, and KnowledgeBase composes them; the entry points (kbtool/__init__.py, __main__.py) sit above all.
# A subpackage its parent names in a layer (evidence's "formats") sits in that layer, its own modules
# layered within it; a package's __init__ is checked where a package declares it.
ARCHITECTURE: dict[str, list[set[str]]] = {
    "model": [
        {"errors", "evidence_layout", "parsing", "resampling", "tokens", "vocabulary"},
        {"cards", "measures"},
        {"applicability", "schemas", "validation"},
        {"fields", "markdown", "policy"},
        {"records"},
        {"contracts"},
    ],
    # the contracts a package of their own, placed as model's top layer: the base, then one module an area
    "model.contracts": [
        {"base"},
        {"evaluation", "search"},
        {"reading", "status"},
        {"checking"},
        {"findings"},
        {"briefing"},
    ],
    "store": [
        {
            "atomic_files",
            "lock_holder",
            "commits",
            "config",
            "files",
            "git_log",
            "git_urls",
            "interrupts",
            "locate",
            "lock_file",
            "merge",
            "scratch",
        },
        {"git_identity", "git_runner", "secrets"},
        {"daemons", "incoming", "lock_history", "repository", "sources"},
        {"history", "sync", "importer", "exchange", "carry", "servers"},
    ],
    "skills": [{"spec"}, {"bundled", "lock"}, {"scan", "staging"}, {"pack", "registry", "arriving"}, {"install"}],
    "agents": [{"targets", "config_files"}, {"hooks"}, {"setup"}],
    "migrations": [{"index"}],  # the index's schema steps (the top-level migrations/ folder)
    "search": [
        {"bootstrap", "chunking", "multilingual", "onnx_encoder", "translation", "vectors"},
        {"embeddings", "onnx_export"},
        {"ranking", "evaluation"},
        {"across"},  # one answer from several knowledge bases' searches
        {"snippets"},  # a hit's snippet: a card's prose, found with ranking's cut
        {"indexed", "lexical"},
        {"index_rows", "vector_rows"},  # what a refresh reads and writes; the vectors, drafts among them
        {"index"},
        {"pipeline"},
    ],
    "evidence": [
        {"environment", "values", "provenance"},
        {"finding_input", "statistics", "verdicts"},
        {"formats"},  # the benchmark-format readers: kbtool/evidence/formats/
        {"load", "plots", "headline"},  # the load vocabulary names keys the readers label; a finding's headline
        {"pairing", "runs", "same_run", "noise_floor"},
        {"repeats"},
        {"run_evidence"},
    ],
    "evidence.formats": [
        {"reader"},
        {"aiperf", "aiperf_records", "guidellm", "lm_eval", "mlperf", "results_tsv", "serving"},
        {"__init__"},  # READERS: every format's reader
    ],
    "curation": [
        {"review", "gate_reach", "gate_lock", "gate_seal", "gate_confirms", "project_state"},
        # gate_inputs: what a verdict is computed from
        {"checks", "committed_secrets", "drift", "gap_standing", "gate_inputs"},
        {"lint_checks"},  # the lint classes, each with its runner
        {"gate_compare"},  # a gate's comparison reads and judges runs as `kb compare` does
        {"gates"},  # runs a gate: its command, or its comparison
        {"gate_runs", "standing"},  # the run log; whether a gate's newest run of kb's judged the candidate as it is now
    ],
    # a star: each part needs only the core; KnowledgeBase composes them all
    "facade": [
        {"shadows", "finding_plan"},  # pure: findings plans with finding_plan, core reads copies with shadows
        {"vector_warm_up"},  # the background build's threads, a service core holds (warm_up) and search asks
        {"core"},
        {"card_standing"},  # how a card stands here beyond its status: list and search show it
        {
            "curation",
            "exchange",
            "findings",
            "gates",
            "imports",
            "review",
            "search",
            "skills",
            "sources",
            "status",
            "writing",
        },
        {"knowledge_base"},
        {"new_project"},
    ],
    "surfaces.web": [{"access", "charts", "render"}, {"views"}, {"app", "site"}],
    # tools/ is a layer of surfaces.mcp: its modules stand on answers and shelf, and server registers them
    "surfaces.mcp": [{"answers", "identity", "prompts"}, {"shelf"}, {"tools"}, {"server"}, {"transports"}],
    "surfaces.mcp.tools": [{"base"}, {"reading", "writing", "curating", "gates", "brief"}],
    "surfaces.daemon": [{"operations", "peers"}, {"client"}, {"search_command", "server"}],
    "surfaces.cli": [
        {"base"},
        {"briefing", "curating", "daemon", "evidence", "gates", "install", "reuse", "search", "skills", "web"},
        {"__init__"},  # the app: every command group registers on it
    ],
    "surfaces": [{"docs"}],  # the reference tables and docs/cli.md, made from the models and the CLI itself
    # the top level: this map (read by tests/process/test_surface.py and docs/development.md, importing nothing of
    # kbtool), then the entry points above all
    "entry": [{"layout"}, {"__init__", "__main__"}],
}
PACKAGES = list(ARCHITECTURE)

# the repository a checkout holds kbtool in: kbtool/ and the top-level migrations/ folder
REPO_ROOT = Path(__file__).resolve().parent.parent


def declared(package: str) -> set[str]:
    """Every module (or subpackage) a package's layers name."""
    return {m for layer in ARCHITECTURE[package] for m in layer}


def folder(package: str) -> str:
    """A package's folder in the repository: `model.contracts` is kbtool/model/contracts, the entry points
    are kbtool itself, migrations the top-level migrations/ (installed as kbtool.migrations)."""
    if package == "entry":
        return "kbtool"
    if package == "migrations":
        return "migrations"
    return "kbtool/" + package.replace(".", "/")


def source_of(package: str, module: str) -> str:
    """The file a module of the map is, from the repository's root; a subpackage is its __init__.py."""
    if f"{package}.{module}" in ARCHITECTURE:
        return f"{folder(f'{package}.{module}')}/__init__.py"
    return f"{folder(package)}/{module}.py"


def summary(path: Path) -> str:
    """The first line of a module's docstring, read with `ast` (the module is not imported); "" if none."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return docstring.strip().splitlines()[0].strip() if docstring else ""


def layout_markdown(root: Path = REPO_ROOT) -> list[str]:
    """The layout of the code as markdown lines: a heading per package in the map's order (what its
    __init__.py says, where the map does not place it), then its layers, lowest first, as a numbered list,
    each module with the first line of its docstring."""
    lines: list[str] = []
    for package in PACKAGES:
        lines += [f"### `{folder(package)}/`", ""]
        init = root / folder(package) / "__init__.py"
        if "__init__" not in declared(package) and init.is_file():
            lines += [summary(init), ""]
        for number, layer in enumerate(ARCHITECTURE[package], 1):
            for i, module in enumerate(sorted(layer)):
                source = source_of(package, module)
                name = f"{module}/" if source.endswith("/__init__.py") and module != "__init__" else f"{module}.py"
                mark = f"{number}." if i == 0 else " " * len(f"{number}.")
                lines.append(f"{mark} - `{name}`: {summary(root / source)}")
        lines.append("")
    return lines[:-1]
