"""`kb search` read from its command line and answered by the daemon without loading the CLI.

An agent runs `kb search` as a new process many times a session, and on a first day while the daemon embeds
on both cores. The CLI costs ~0.3 s before a query leaves (typer loads pydantic and every command's module);
this path sends the same request in ~0.1 s. It reads only a command line made of what `kb search` itself
declares: FLAGS below is generated from the CLI's declaration of the command (`make docs`; `make lint` fails
when it is stale), so the two cannot drift. Anything else (--help, --batch, a flag it does not list, a value not
of its type, a second query) goes to the CLI, which answers it or says what is wrong. The CLI's `search`
command builds its request and prints its answer with the same functions (options, answer, show).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from kbtool.model.errors import command_failure
from kbtool.store.locate import resolve_root
from kbtool.surfaces.daemon.client import run_searches

COMMAND = "search"
# each flag of `kb search` (and --kb, the one option kb takes before any command): (the CLI function's parameter,
# its kind: str, path, list (repeatable), int, int>=N, true or false (a flag setting it)), and each parameter's
# default; --batch is left to the CLI (a file of queries, one JSON line each)
# [[[cog
# import cog
# from kbtool.surfaces.docs import search_flags
# cog.out(search_flags())
# ]]]
FLAGS: dict[str, tuple[str, str]] = {
    "-k": ("k", "int"),
    "--offset": ("offset", "int>=0"),
    "--kind": ("kind", "str"),
    "--status": ("status", "str"),
    "--tag": ("tag", "list"),
    "-t": ("tag", "list"),
    "--where": ("where", "list"),
    "-w": ("where", "list"),
    "--mode": ("mode", "str"),
    "--explain": ("explain", "true"),
    "--no-explain": ("explain", "false"),
    "--env": ("env", "true"),
    "--for": ("applies_for", "list"),
    "--only-applying": ("only_applying", "true"),
    "--no-sources": ("no_sources", "true"),
    "--kb": ("kb", "path"),
    "--json": ("as_json", "true"),
}
DEFAULTS: dict[str, Any] = {
    "query": None,
    "k": 10,
    "offset": 0,
    "kind": None,
    "status": None,
    "tag": None,
    "where": None,
    "mode": "hybrid",
    "explain": False,
    "env": False,
    "applies_for": None,
    "only_applying": False,
    "no_sources": False,
    "kb": None,
    "as_json": False,
}
# [[[end]]]


def run(argv: list[str]) -> int | None:
    """Answer `kb [--kb PATH] search QUERY [FLAGS]` and return its exit status; None, having done nothing, when
    argv is anything else (the CLI's to read)."""
    read = read_command_line(argv)
    if read is None:
        return None
    values, root_given = read
    try:
        result = answer(resolve_root(values["kb"] or root_given), values["query"], values)
        show(result, values["as_json"], values["explain"])
        sys.stdout.flush()  # a closed pipe is said here, not at exit
    except BrokenPipeError:  # `kb search ... | head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        said = command_failure(exc, debug=bool(os.environ.get("KB_DEBUG")))
        if said is None:
            raise
        print(said[0], file=sys.stderr)
        return said[1]
    return 0


def read_command_line(argv: list[str]) -> tuple[dict[str, Any], Path | None] | None:
    """The search command's parameters by the names the CLI's function takes, and the --kb given before the
    command; None when argv is not a search this path reads exactly as the CLI would."""
    args = list(argv)
    root_given: Path | None = None
    while args and args[0] != COMMAND:  # options before the command: kb takes --kb there
        flag, value, args = _next_option(args)
        if flag != "--kb" or value is None:
            return None
        root_given = Path(value)
    if not args:
        return None
    values = dict(DEFAULTS)
    args = args[1:]
    while args:
        if not args[0].startswith("-") or args[0] == "-":  # the query ("-" too, as the CLI takes it)
            if values["query"] is not None:
                return None
            values["query"], args = args[0], args[1:]
            continue
        flag, value, args = _next_option(args)
        if flag not in FLAGS:
            return None
        name, kind = FLAGS[flag]
        if kind in ("true", "false"):
            if value is not None:  # --json=yes: the CLI's to refuse
                return None
            values[name] = kind == "true"
            continue
        typed = _typed(value, kind)
        if typed is None:
            return None
        values[name] = [*(values[name] or []), typed] if kind == "list" else typed
    return (values, root_given) if values["query"] is not None else None


def _next_option(args: list[str]) -> tuple[str, str | None, list[str]]:
    """The first argument as an option: its flag, its value (after '=' in a long one, else the next argument when
    the flag takes one), and the arguments after them. A short flag with more after it (-k5, -k=5) is returned
    whole, as a flag no table lists: click reads what follows as its value, '=' included."""
    flag, equals, inline = args[0].partition("=")
    if equals and flag.startswith("--"):
        return flag, inline, args[1:]
    flag = args[0]
    takes_value = FLAGS.get(flag, ("", "str"))[1] not in ("true", "false")
    if takes_value and len(args) > 1 and not args[1].startswith("-"):
        return flag, args[1], args[2:]
    return flag, None, args[1:]


def _typed(value: str | None, kind: str) -> Any:
    """value as the CLI would convert it for kind; None when the CLI might read it otherwise or refuse it."""
    if value is None:
        return None
    if kind in ("str", "list"):
        return value
    if kind == "path":
        return Path(value)
    least = int(kind.partition(">=")[2] or "0") if ">=" in kind else None
    if not (value.isascii() and value.isdigit()):  # "-1", "+2", " 3", "1_000", "²": the CLI's to read or refuse
        return None
    number = int(value)
    return None if least is not None and number < least else number


def options(values: dict[str, Any]) -> dict[str, Any]:
    """The search request both paths send, but for its query: the CLI function's parameters in the names of
    kbtool.model.contracts.SearchRequest."""
    return {
        "k": values["k"],
        "kind": values["kind"],
        "status": values["status"],
        "tags": values["tag"] or [],
        "where": values["where"] or [],
        "mode": values["mode"],
        "explain": values["explain"],
        "sources": not values["no_sources"],
        "env": values["env"],
        "for": values["applies_for"] or [],
        "only_applying": values["only_applying"],
    }


def answer(root: Path, query: str, values: dict[str, Any]) -> dict[str, Any]:
    """One query's answer, from the daemon (else in this process): -k hits past --offset, paged as the MCP search
    tool pages them (SearchPage.whole)."""
    offset = values["offset"]
    [result] = run_searches(root, [{"query": query, **options(values), "k": values["k"] + offset}])
    if offset:
        hits = result["hits"][offset:]
        result.update(hits=hits, shown=len(hits), found=len(hits), offset=offset)
    return result


def json_text(value: Any) -> str:
    """Any answer as every --json of kb prints it: indented, non-ASCII as it is, what JSON lacks as its text."""
    return json.dumps(value, ensure_ascii=False, indent=2, default=str)


def show(result: dict[str, Any], as_json: bool, explain: bool) -> None:
    """The answer on stdout: its JSON (--json), else each hit in a few lines; "no matching cards" on stderr."""
    if as_json:
        print(json_text(result))
        return
    for n, hit in enumerate(result["hits"], 1):
        applies = f"  applies: {hit['applies']}" if hit.get("applies") else ""
        status = f"{hit['status']}; {hit['standing']}" if hit.get("standing") else hit["status"]
        print(f"{n:>2}. {hit['id']}  [{hit['kind']}, {status}]  {hit['score']:.4f}{applies}")
        print(f"    {hit['title']}")
        if hit.get("source"):
            print(f"    from {source_line(hit['source'])}")
        print(f"    {hit['snippet']}")
        if hit.get("may_not_apply"):
            print(f"    may not apply here: {'; '.join(hit['may_not_apply'])}")
        if explain:
            legs = ", ".join(
                f"{name} {_leg_rank(v)}"
                for name, v in hit["explain"].items()
                if name in ("bm25", "vector", "multilingual")
            )
            print(f"    explain: {legs}; demoted: {hit['explain']['demoted']}")
    if not result["hits"]:
        print("no matching cards", file=sys.stderr)


def _leg_rank(leg: dict[str, Any] | None) -> str:
    return f"rank {leg['rank']} ({leg['score']:.4f})" if leg else "-"


def source_line(source: dict[str, Any]) -> str:
    """Where a card came from, in one line: a path or a URL (a source needs one), and the heading."""
    where = source.get("path") or source.get("url") or "?"
    return where + (f" # {source['heading']}" if source.get("heading") else "")
