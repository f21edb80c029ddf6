"""What every `kb` command shares: the application, its groups and common options.

Here too are the helpers that open the knowledge base and print. The commands are
kbtool/surfaces/cli/__init__.py (cards) and the modules beside this one, which its docstring lists (among them
search, gates and skills in the knowledge base, and install.py: skills and kb itself put into agents).

Every library error becomes one line on stderr and the error's exit code (2 bad input, 1 a failed
check); nothing prints a traceback.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperGroup

from kbtool.model.errors import BadInput, command_failure
from kbtool.model.vocabulary import STATUSES, words
from kbtool.store import interrupts
from kbtool.store.locate import resolve_root

if TYPE_CHECKING:
    from kbtool.facade.knowledge_base import KnowledgeBase
    from kbtool.model.records import StoredCard


class KbGroup(TyperGroup):
    """Maps library errors to one-line messages and exit codes, for every subcommand."""

    def invoke(self, ctx: Any) -> Any:  # a typer.Context; typed as the base class's click Context allows
        with interrupts.command() as finished_despite:
            result = self._invoke(ctx)
        if finished_despite:  # the signal came once the change was committed: it is done, and says so
            interrupts.say(interrupts.interrupted_line())
            raise typer.Exit(128 + finished_despite[0])  # interrupted all the same: never 0
        return result

    def _invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except (KeyboardInterrupt, interrupts.Terminated) as exc:
            done = (
                "what was committed before it stays"
                if interrupts.committed_before_interrupt()
                else "nothing was committed"
            )
            interrupts.say(f"kb: interrupted; {done}")
            raise typer.Exit(interrupts.exit_code(exc)) from None
        except (typer.Exit, typer.Abort, typer.TyperException):
            raise  # usage errors and exits: typer prints and exits as usual
        except BrokenPipeError:  # `kb compare ... | head`: the reader has what it wanted; say nothing more
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # nor at exit, when stdout flushes
            raise typer.Exit(141) from None  # as a writer ended by SIGPIPE
        except Exception as exc:  # a library error, a path refused, or a bug in kb: one line (command_failure)
            said = command_failure(exc, debug=bool(os.environ.get("KB_DEBUG")))
            if said is None:
                raise
            typer.echo(said[0], err=True)
            raise typer.Exit(said[1]) from None


def make_app(help_text: str) -> typer.Typer:
    return typer.Typer(
        cls=KbGroup,
        help=help_text,
        rich_markup_mode=None,
        pretty_exceptions_enable=False,
        no_args_is_help=True,
        add_completion=False,
    )


app = make_app("kb: a git-backed knowledge base of contracts, constraints, findings and gates.")
schema_app = make_app("JSON Schemas of the card kinds.")
app.add_typer(schema_app, name="schema")
gate_app = make_app("Immutable acceptance checks: lock, run, verify.")
app.add_typer(gate_app, name="gate")
skill_app = make_app("The skill registry: Agent Skills (skills/<name>/SKILL.md) kept in the knowledge base.")
app.add_typer(skill_app, name="skill")

# Options shared by many commands, declared once.
KbPath = Annotated[
    Path | None,
    typer.Option(
        "--kb",
        help="The knowledge base (default: $KB_DIR, else the nearest folder above with kb.toml).",
        show_default=False,
    ),
]
JsonOut = Annotated[bool, typer.Option("--json", help="Print JSON (stable field names) instead of text.")]
AllowSecret = Annotated[
    bool,
    typer.Option(
        "--allow-secret",
        help="Write text that looks like a credential (a key, a token, a private key) anyway: you say it is not one.",
    ),
]
Fields = Annotated[
    list[str] | None,
    typer.Option(
        "--field",
        "-f",
        help="KEY=VALUE; dotted keys for nested fields (check.threshold=12), repeat a key for a list.",
        show_default=False,
    ),
]
IgnoreCondition = Annotated[
    list[str] | None,
    typer.Option(
        "--ignore-condition",
        help="A load condition (e.g. input_tokens) to compare across when it differs; the finding records that it "
        "did (repeatable).",
        show_default=False,
    ),
]
Tags = Annotated[list[str] | None, typer.Option("--tag", "-t", help="A tag (repeatable).", show_default=False)]
Where = Annotated[
    list[str] | None,
    typer.Option(
        "--where",
        "-w",
        help="FIELD=VALUE filter on any card field, e.g. applies_to.hardware=B200, or FIELD!=VALUE to leave those "
        "out, e.g. applies_to.modality!=vision (repeatable; all must hold).",
        show_default=False,
    ),
]
For = Annotated[
    list[str] | None,
    typer.Option(
        "--for",
        help="FIELD=VALUE of the environment the answer is for (hardware=H100, modality=vision; repeatable; "
        "default: kb.toml [environment], FIELD=any to not judge a field): each card says how it applies (scoped, "
        "family, general, other) and cards scoped elsewhere come last.",
        show_default=False,
    ),
]
OnlyApplying = Annotated[bool, typer.Option("--only-applying", help="Leave out the cards scoped elsewhere than --for.")]
NoSources = Annotated[
    bool, typer.Option("--no-sources", help="This knowledge base alone, not the ones kb.toml names as sources.")
]
CardRef = Annotated[str, typer.Argument(metavar="ID", help="A card id, or a unique prefix of one.")]
Status = Annotated[
    str | None,
    typer.Option("--status", help=f"{words(STATUSES)}.", show_default=False),
]


def _print_version(value: bool) -> None:
    if value:
        from kbtool import __version__

        typer.echo(f"kb {__version__}")
        raise typer.Exit()


@app.callback()
def _global_options(
    kb: Annotated[
        Path | None,
        typer.Option(
            "--kb",
            help="The knowledge base for any command (default: $KB_DIR, else the nearest folder above with kb.toml).",
            show_default=False,
        ),
    ] = None,
    version: Annotated[
        bool, typer.Option("--version", help="Print kb's version and exit.", is_eager=True, callback=_print_version)
    ] = False,
) -> None:
    # One invocation, one value: reset on every run so nothing leaks between runs in a process.
    _invocation["kb"] = kb


_invocation: dict[str, Path | None] = {"kb": None}


def root_of(path: Path | None) -> Path:
    return resolve_root(path if path is not None else _invocation["kb"])


def open_kb(path: Path | None, allow_secret: bool | None = None) -> KnowledgeBase:
    """The command's --kb, else the one given before the command (`kb --kb PATH list`). allow_secret: the
    command's --allow-secret (AllowSecret), None for a command without it: a refusal of a credential then
    does not offer it."""
    # imported here, not at the top: `kb search` answered by the daemon never needs pydantic or git
    from kbtool.facade.knowledge_base import KnowledgeBase

    base = KnowledgeBase.open(root_of(path))
    base.allow_secrets = bool(allow_secret)
    base.credential_override = "pass --allow-secret" if allow_secret is not None else None
    OPENED.append(base)
    return base


OPENED: list[KnowledgeBase] = []  # what this command opened, for what is said once at its end


def say_identity() -> None:
    """Once, at the end of a command that committed without a git identity: kb signed for nobody."""
    if not OPENED:  # a search the daemon answered opened nothing, and must not load git to say so
        return
    from kbtool.store.git_identity import NO_IDENTITY

    if any(NO_IDENTITY in base.notices for base in OPENED):
        typer.echo(f"kb: note: {NO_IDENTITY}", err=True)
    OPENED.clear()


def current_agent() -> str | None:
    """The agent running this command, if its environment names one (kbtool.curation.review); imported here
    because the review rules load the card models, which `kb search` through the daemon never needs."""
    from kbtool.curation.review import agent_from_env

    return agent_from_env()


def show_notices(base: KnowledgeBase) -> None:
    for notice in base.notices:
        typer.echo(f"kb: note: {notice}", err=True)


@contextmanager
def progress_bar(label: str) -> Iterator[Callable[[int, int], None] | None]:
    """A progress bar on a terminal; nothing when stderr is a pipe or a file."""
    if not sys.stderr.isatty():
        yield None
        return
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        bar = state.get("bar")
        if bar is None:
            bar = state["bar"] = typer.progressbar(length=total, label=label, file=sys.stderr)
            bar.__enter__()
        bar.update(done - bar.pos)

    try:
        yield update
    finally:
        if "bar" in state:
            state["bar"].__exit__(None, None, None)


def committed(commit: str | None) -> str:
    return f" (commit {commit[:10]})" if commit else " (nothing to commit)"


def print_json(value: Any) -> None:
    from kbtool.surfaces.daemon.search_command import json_text  # the light search's, which cannot import this

    typer.echo(json_text(value))


def read_text_arg(path: Path) -> str:
    """A file given on the command line ('-' is stdin), refused clearly when unreadable."""
    if str(path) == "-":
        return sys.stdin.read()
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BadInput(f"{path}: cannot read ({exc})") from None


def body_from(body: str | None, body_file: Path | None) -> str | None:
    if body is not None and body_file is not None:
        raise BadInput("give --body or --body-file, not both")
    return read_text_arg(body_file) if body_file is not None else body


def print_written(stored: StoredCard, as_json: bool) -> None:
    """What a write prints: the id, or with --json the whole card."""
    if as_json:
        print_json(stored.to_dict())
    else:
        typer.echo(stored.id)


def print_rows(rows: list[list[str]]) -> None:
    """[id, kind, status, (applies,) title] rows as aligned columns, the title last."""
    if not rows:
        return
    columns = max(len(r) for r in rows) - 1
    widths = [max(len(r[i]) for r in rows if i < len(r) - 1) for i in range(columns)]
    for r in rows:
        cells = [f"{cell:<{widths[i]}}" for i, cell in enumerate(r[:-1])]
        typer.echo("  ".join([*cells, r[-1]]))


def project_dir() -> Path:
    """Where a gate runs when no --in is given: a gate judges a project, and a project is a repository,
    so the top of the git repository around the working directory (as `make` or `pytest` would be run
    from it), else the working directory itself."""
    return git_top(Path.cwd()) or Path.cwd()


def git_top(here: Path) -> Path | None:
    """The top of the git repository holding here, if any (no git process: this runs on every add-finding)."""
    here = here.resolve()
    return next((folder for folder in (here, *here.parents) if (folder / ".git").exists()), None)


# kb import --from-kb and kb promote: which side a field both knowledge bases changed differently takes
TakeSide = Annotated[
    str | None,
    typer.Option(
        "--take",
        metavar="ours|theirs",
        help="Where both knowledge bases changed a field differently: take this one's value (ours) or the "
        "other's (theirs) instead of stopping.",
        show_default=False,
    ),
]
