"""`kb add-finding`, `kb compare` and `kb plot`: findings from evidence, and evidence read.

Evidence: `kb add-finding`, a finding from measured numbers or a benchmark's exports (its flags, or its
--json-input, made one FindingInput for KnowledgeBase.record_finding; kbtool.evidence.formats reads the
exports); and evidence as people read it: `kb compare`, two sets of runs (or two findings) side by side, each
metric's change with its 95% interval and a verdict (KnowledgeBase.compare, kbtool.evidence.repeats
underneath); `kb plot`, a metric across findings or a session's progress as a picture
(KnowledgeBase.plot and plot_session, kbtool.evidence.plots underneath)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from kbtool.evidence import formats
from kbtool.model.errors import BadInput
from kbtool.model.parsing import json_input
from kbtool.model.vocabulary import DIRECTIONS, words
from kbtool.surfaces.cli.base import (
    AllowSecret,
    IgnoreCondition,
    JsonOut,
    KbPath,
    Status,
    Tags,
    Where,
    app,
    current_agent,
    git_top,
    open_kb,
    print_json,
    show_notices,
)

if TYPE_CHECKING:
    from kbtool.model.contracts import FindingInput


@app.command()
def compare(
    candidate: Annotated[str, typer.Argument(help="An export, a folder of exports (a run each), or a finding id.")],
    baseline: Annotated[str, typer.Argument(help="The same, for the baseline.")],
    ignore_condition: IgnoreCondition = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", help="Only this metric, as the rows name it (repeatable; default: all).", show_default=False
        ),
    ] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Each metric both sides measured under the same load: the means with their 95% intervals, the change
    with its interval, and a verdict (better, worse, no clear change). Runs at different loads (concurrency,
    rate, prompt and output lengths, ...) are refused, naming the condition. (--json: the MCP compare tool's
    answer; with --metric, `total` says how many rows there are in all.)"""
    result = open_kb(kb).compare(candidate, baseline, ignore=ignore_condition or [])
    if metric:
        result = result.only(metric, len(result.metrics))
    if as_json:
        print_json(result.to_json())
        return
    for line in result.lines():
        typer.echo(line)


@app.command()
def plot(
    out: Annotated[Path, typer.Option("--out", "-o", help="The picture to write: FILE.png or FILE.svg.")],
    metric: Annotated[
        str | None, typer.Option(help="The metric to draw across findings (as their evidence names it).")
    ] = None,
    where: Where = None,
    by: Annotated[
        str | None,
        typer.Option(help="A condition to draw the metric over (e.g. concurrency): a line per finding."),
    ] = None,
    session: Annotated[
        Path | None,
        typer.Option(help="Draw an experiment session instead: its results TSV, each experiment in order."),
    ] = None,
    metric_name: Annotated[
        str, typer.Option(help="With --session: the column to draw (default: its first of numbers).")
    ] = "metric",
    title: Annotated[str | None, typer.Option(help="The picture's title (default: what it shows).")] = None,
    kb: KbPath = None,
    as_json: JsonOut = False,
) -> None:
    """Draw evidence as a PNG or SVG (needs matplotlib: pip install 'kbtool[plot]'): a metric across
    the findings of a scope, each with its 95% interval and baseline, or a session's progress."""
    if (metric is None) == (session is None):
        raise BadInput("give --metric NAME (across findings) or --session RESULTS.tsv (one of them)")
    if session is not None and (where or by):
        raise BadInput("--where and --by go with --metric; a session is one results TSV")
    base = open_kb(kb)
    if session is not None:
        result = base.plot_session(session, out, metric_name, title)
    else:
        assert metric is not None
        result = base.plot(metric, out, where or [], by, title)
    if as_json:
        print_json(result.to_json())
        return
    if result.experiments is not None:
        typer.echo(
            f"wrote {result.path}: {result.metric} over {result.experiments} experiments, {result.kept} kept"
            + (f", {result.left_off} with no value left off" if result.left_off else "")
        )
    else:
        typer.echo(f"wrote {result.path}: {result.metric}, {result.points} values from {', '.join(result.findings)}")


@app.command("add-finding")
def add_finding(
    title: Annotated[str | None, typer.Option("--title", help="What was found, in one line.")] = None,
    claim: Annotated[str | None, typer.Option(help="The claim, if longer than the title.")] = None,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            "--metric", "-m", help="NAME=VALUE[UNIT] measured, e.g. tpot=0.56ms (repeatable).", show_default=False
        ),
    ] = None,
    baseline: Annotated[
        list[str] | None,
        typer.Option(
            "--baseline", help="NAME=VALUE[UNIT] of the baseline for a --metric (repeatable).", show_default=False
        ),
    ] = None,
    direction: Annotated[
        str | None,
        typer.Option(help=f"{words(DIRECTIONS)}: which way is better (guessed from the metric's name when left out)."),
    ] = None,
    applies_to: Annotated[
        list[str] | None,
        typer.Option(
            "--applies-to",
            "-a",
            help="KEY=VALUE scope: model, arch, hardware, precision, phase, workload, engine, modality (repeatable).",
            show_default=False,
        ),
    ] = None,
    status: Status = None,
    project: Annotated[str | None, typer.Option(help="The project that measured it.")] = None,
    closes: Annotated[
        str | None,
        typer.Option(
            help="The id of a gap this finding answers; links both. The gap closes once the finding is confirmed "
            "(a person's own confirmed finding is; an agent's waits for kb confirm or a locked gate's pass). A "
            "source's gap (SOURCE:ID) closes here only."
        ),
    ] = None,
    tag: Tags = None,
    from_file: Annotated[
        list[Path] | None,
        typer.Option(
            "--from",
            help=f"A benchmark export: {formats.described()}. Repeat it for several runs of one configuration "
            "(or give the folder holding them): each metric then gets n, mean, std and a 95% interval.",
            show_default=False,
        ),
    ] = None,
    baseline_from: Annotated[
        list[Path] | None,
        typer.Option(
            "--baseline-from",
            help="An export of the baseline (repeatable, a run each): each metric's change gets a 95% interval and a "
            "verdict (better, worse, no clear change); a finding none of whose changes is clear stays tentative.",
            show_default=False,
        ),
    ] = None,
    metric_name: Annotated[
        str, typer.Option(help="The metric of a results TSV: the column to read (default: its first of numbers).")
    ] = "metric",
    repo: Annotated[
        Path | None,
        typer.Option(
            help="The experiment repository whose HEAD and dirty state to record (default: the working "
            "directory, when it is one)."
        ),
    ] = None,
    command: Annotated[
        str | None, typer.Option(help="The command that measured the --metric values (kept with each).")
    ] = None,
    condition: Annotated[
        list[str] | None,
        typer.Option(
            "--condition",
            "-c",
            help="KEY=VALUE under which the --metric values were measured, e.g. concurrency=32 (repeatable).",
            show_default=False,
        ),
    ] = None,
    env: Annotated[
        list[str] | None,
        typer.Option(
            "--env",
            "--environment",
            help="KEY=VALUE of where the numbers were measured, when no export says so: gpu, driver, an engine's or "
            "library's version, e.g. gpu='NVIDIA H100 80GB HBM3' (repeatable). Never this machine unless given.",
            show_default=False,
        ),
    ] = None,
    ignore_condition: IgnoreCondition = None,
    json_input: Annotated[bool, typer.Option(help="Read the same fields as a JSON object on stdin.")] = False,
    body: Annotated[str | None, typer.Option(help="Notes (markdown).")] = None,
    strict: Annotated[
        bool, typer.Option(help="Refuse (exit 1, nothing written) when likely duplicates or contradictions exist.")
    ] = False,
    kb: KbPath = None,
    allow_secret: AllowSecret = False,
    as_json: JsonOut = False,
) -> None:
    """Record an experiment's finding with measured evidence; one commit, the index updated.

    Run by an agent (see `kb review`), the finding is tentative until a person confirms it."""
    from kbtool.model.contracts import FindingInput

    base = open_kb(kb, allow_secret)
    if json_input:
        flags = {
            "--title": title,
            "--claim": claim,
            "--metric": metric,
            "--baseline": baseline,
            "--from": from_file,
            "--baseline-from": baseline_from,
            "--ignore-condition": ignore_condition,
            "--env": env,
        }
        given = [flag for flag, value in {**flags, "--body": body}.items() if value]
        if given:
            raise BadInput(
                f"--json-input takes every field from stdin; {', '.join(given)} would be ignored, so drop it"
            )
        finding = FindingInput.parse(_json_stdin(), "--json-input")
        if not finding.title:
            raise BadInput("a finding needs a --title")
    else:
        finding = _finding_from_flags(
            {
                "title": title,
                "claim": claim,
                "metrics": metric or [],
                "baseline": baseline or [],
                "direction": direction,
                "applies_to": applies_to or [],
                "status": status,
                "project": project,
                "closes": closes,
                "tags": tag or [],
                "from": [str(path) for path in from_file or []],
                "baseline_from": [str(path) for path in baseline_from or []],
                "metric_name": metric_name,
                "body": body,
                "command": command,
                "conditions": condition or [],
                "environment": env or [],
                "ignore_conditions": ignore_condition or [],
            }
        )
    if not finding.repo:  # the experiment's repository: --repo, else the working directory's, when it is one
        top = repo or git_top(Path.cwd())
        finding = finding.model_copy(update={"repo": str(top) if top else None})
    added = base.record_finding(finding, agent=current_agent(), strict=strict)
    for label, ids in added.related.model_dump().items():
        if ids:
            typer.echo(f"kb: warning: likely {label} of {added.id}: {', '.join(ids)}", err=True)
    show_notices(base)
    if as_json:
        print_json({**base.get(added.id).to_dict(), "related": added.related.model_dump()})
    else:
        typer.echo(added.id)


def _finding_from_flags(flags: dict[str, Any]) -> FindingInput:
    """The FindingInput `kb add-finding`'s flags say, each flag's errors in its own words: the metrics and
    conditions read here (`tpot=0.56ms`, `concurrency=32`), the scope's `key=value` pairs by the contract."""
    from kbtool.evidence.finding_input import parse_conditions, parse_environment, parse_metric_flags
    from kbtool.model.contracts import FindingInput
    from kbtool.model.measures import checked_direction

    flags["metrics"] = parse_metric_flags(flags["metrics"], "--metric")
    flags["baseline"] = parse_metric_flags(flags["baseline"], "--baseline")
    flags["conditions"] = parse_conditions(flags["conditions"], "--condition")
    flags["environment"] = parse_environment(flags["environment"], "--env")
    if not flags["title"]:
        raise BadInput("a finding needs a --title")
    if flags["direction"] is not None:
        checked_direction(flags["direction"], "--direction")
    return FindingInput.parse({key: value for key, value in flags.items() if value is not None})


def _json_stdin() -> Any:
    return json_input(sys.stdin.read(), "--json-input: stdin")
