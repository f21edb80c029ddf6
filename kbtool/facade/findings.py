"""The part of the facade that records what experiments measured: findings from evidence (kbtool.evidence),
and evidence compared and drawn (kb compare, kb plot)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.curation.review import agent_status
from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.cards import Finding, checked_status
from kbtool.model.contracts import Compared, Comparison, FindingAdded, FindingInput, Plotted, relations
from kbtool.model.errors import BadInput, CardNotFound, CheckFailed, InvalidCard
from kbtool.model.fields import parse_assignments
from kbtool.model.records import StoredCard, gap_of
from kbtool.model.validation import model_for

if TYPE_CHECKING:
    from kbtool.evidence.finding_input import MetricInput


class Findings(KnowledgeBaseCore):
    """Findings from evidence, their supersession and status, and evidence compared and drawn."""

    def add_finding(
        self,
        title: str,
        claim: str | None = None,
        metrics: dict[str, MetricInput] | None = None,
        baselines: dict[str, MetricInput] | None = None,
        direction: str | None = None,
        applies_to: Iterable[str] = (),
        status: str | None = None,
        project: str | None = None,
        closes: str | None = None,
        tags: Iterable[str] = (),
        artifact: Path | Iterable[Path] | None = None,
        baseline_artifacts: Iterable[Path] = (),
        metric_name: str = "metric",
        repo: Path | None = None,
        body: str = "",
        strict: bool = False,
        agent: str | None = None,
        command: str | None = None,
        conditions: dict[str, Any] | None = None,
        ignore_conditions: Iterable[str] = (),
    ) -> tuple[StoredCard, dict[str, builtins.list[str]]]:
        """Record a measured finding in one commit; returns it and its likely duplicates and contradictions.

        metrics and baselines map a metric name to (value, unit), or to an evidence entry's fields
        ({"value", "unit", "stats", "samples", ...}); command and conditions apply to every metric.
        With runs (artifact, baseline_artifacts), each metric is combined per load and judged against the
        baseline at the same load (kbtool.evidence.run_evidence); runs at different loads are refused unless
        ignore_conditions names the condition. Nothing measured, nothing written: BadInput.
        An agent's finding is tentative until reviewed (kbtool.curation.review)."""
        from kbtool.curation.checks import related_findings
        from kbtool.evidence.finding_input import evidence_from_metrics
        from kbtool.evidence.provenance import repo_state, require_repository

        if agent is not None:
            status = agent_status(status, "tentative")
        evidence = evidence_from_metrics(metrics or {}, baselines or {}, direction, command, conditions)
        scope = parse_assignments([f"applies_to.{a}" for a in applies_to], model_for("finding")).get("applies_to", {})
        runs = [artifact] if isinstance(artifact, Path) else list(artifact or [])
        baselines_given = list(baseline_artifacts)
        if baselines_given and not runs:
            raise BadInput("--baseline-from needs the candidate's runs too: --from FILE (repeat it for each run)")
        if runs:
            from kbtool.evidence.run_evidence import evidence_from_runs

            found = evidence_from_runs(runs, baselines_given, metric_name, repo, ignore_conditions)
            evidence += found.evidence
            scope = {**found.applies_to, **scope}
            for note in found.notes:
                self.note(note)
            # a finding shows something only when some change's interval is clear of zero, from valid runs
            if found.unclear or found.invalid:
                why = "a run is invalid" if found.invalid else "no change's 95% interval is clear of zero"
                if status == "confirmed":
                    self.note(f"{why}: recorded as tentative, not confirmed")
                status = "tentative" if status in (None, "confirmed") else status
            body = _run_body(found, body)
        if not evidence:
            raise BadInput(
                "a finding records what was measured, and nothing was: give metrics (--metric NAME=VALUE; MCP "
                "metrics) or a benchmark export (--from; MCP artifact); an open question is a gap"
            )
        data: dict[str, Any] = {
            "kind": "finding",
            "title": title,
            "claim": claim or title,
            "evidence": evidence,
            "applies_to": scope,
            "tags": list(tags),
            "environment": dict(self.machine_environment()),
            "status": status or ("confirmed" if evidence else "tentative"),
        }
        checked_status(data["status"])
        state = repo_state(repo) if repo is not None else None
        if repo is not None and state is None:
            require_repository(repo)  # a repository with no commit yet records nothing; a mistyped path is refused
        if state:
            data["repo"] = state
        data["provenance"] = {k: v for k, v in (("project", project), ("agent", agent)) if v}
        gap = self._open_gap(closes) if closes else None
        existing = [c.data for c in self.summaries(kind="finding")]
        related = related_findings(data, existing)
        if strict and (related["duplicates"] or related["contradictions"]):
            raise CheckFailed(
                "not written (--strict): likely duplicates "
                + (", ".join(related["duplicates"]) or "none")
                + "; contradicts "
                + (", ".join(related["contradictions"]) or "nothing")
            )
        if gap is not None:
            data["links"] = {"closes": [gap.id]}
        extra = (
            (
                lambda card: {
                    gap.path: self._render(
                        gap.card.model_copy(update={"closed_by": [*gap_of(gap).closed_by, card.id]}), gap.body, gap.path
                    )
                }
            )
            if gap
            else None
        )
        stored = self._create(data, body, origin="new finding", extra_writes=extra)
        self._refresh_lexical()
        return stored, related

    def record_finding(self, finding: FindingInput, agent: str | None = None) -> FindingAdded:
        """add_finding from one parsed JSON object (`kb add-finding --json-input`, MCP add_finding)."""
        from kbtool.evidence.finding_input import finding_arguments

        args = finding_arguments(finding)
        if not args["title"]:
            raise BadInput("a finding needs a title")
        said = len(self.notices)
        stored, related = self.add_finding(**args, agent=agent)
        evidence = stored.card.evidence if isinstance(stored.card, Finding) else []
        return FindingAdded(
            id=stored.id,
            path=stored.path,
            status=stored.card.status,
            related=relations(related),
            evidence=len(evidence),
            judged=sum(1 for e in evidence if e.baseline is not None),
            notes=self.notices[said:],
        )

    def _open_gap(self, ref: str) -> StoredCard:
        try:
            gap = self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"--closes {ref}: no gap with that id") from None
        if gap.card.kind != "gap":
            raise InvalidCard(f"--closes {ref}: {gap.id} is a {gap.card.kind}, not a gap")
        return gap

    def compare(
        self, candidate: str, baseline: str, metric_name: str = "metric", ignore: Iterable[str] = ()
    ) -> Comparison:
        """`kb compare`: each metric both sides measured under the same load, with intervals and a verdict
        (kbtool.evidence.repeats). A side is an export, a folder of exports (one run each), or a finding's id.
        Runs at different loads are refused, naming the condition (kbtool.evidence.pairing), unless its key is
        in ignore; what could not be compared is in the notes."""
        from kbtool.evidence.repeats import compare

        (ours, our_names), (theirs, their_names) = (
            self._runs_of(candidate, metric_name),
            self._runs_of(baseline, metric_name),
        )
        notes: builtins.list[str] = []
        rows = compare(ours, theirs, ignore, notes, (our_names, their_names))
        return Comparison(
            candidate=candidate, baseline=baseline, metrics=[Compared(**row) for row in rows], notes=notes
        )

    def plot(
        self,
        metric: str,
        out: str | os.PathLike[str],
        where: Iterable[str] = (),
        by: str | None = None,
        title: str | None = None,
    ) -> Plotted:
        """`kb plot --metric`: the metric in every finding (of the --where scope) that measured it, as a
        PNG or SVG (kbtool.evidence.plots): a line per finding over the condition `by`, or a bar each."""
        from kbtool.evidence.plots import draw_findings, findings_series, output_format

        path = Path(out)
        fmt = output_format(path)
        findings = self.summaries_everywhere(kind="finding", where=where)
        series = findings_series((f.data for f in findings), metric, by)
        if not series:
            measured = sorted({e["metric"] for f in findings for e in f.data.get("evidence") or []})
            scope = f" under {', '.join(where)}" if where else ""
            condition = f" with the condition {by}" if by else ""
            hint = (
                f"; they measure {', '.join(measured[:12])}{' ...' if len(measured) > 12 else ''}" if measured else ""
            )
            raise BadInput(f"no finding{scope} measured {metric}{condition}{hint}")
        units = sorted({s.unit for s in series if s.unit})
        if len(units) > 1:
            raise BadInput(f"the findings measure {metric} in {' and '.join(units)}: narrow them with --where")
        draw_findings(series, metric, by, path, title)
        points = sum(len(s.points) for s in series)
        drawn = builtins.list(dict.fromkeys(s.finding for s in series))
        return Plotted(path=str(path), format=fmt, metric=metric, findings=drawn, points=points)

    def plot_session(
        self,
        results: str | os.PathLike[str],
        out: str | os.PathLike[str],
        metric_name: str = "metric",
        title: str | None = None,
    ) -> Plotted:
        """`kb plot --session`: an experiment session's results TSV as its progress (kbtool.evidence.plots)."""
        from kbtool.evidence.formats.results_tsv import read_session
        from kbtool.evidence.plots import draw_session, output_format

        path = Path(out)
        fmt = output_format(path)
        session = read_session(Path(results), metric_name)
        counts = draw_session(session, path, title)
        return Plotted(
            path=str(path),
            format=fmt,
            metric=session.metric,
            points=counts["drawn"],
            experiments=counts["experiments"],
            kept=counts["kept"],
            left_off=counts["left_off"],
        )

    def _runs_of(
        self, ref: str, metric_name: str
    ) -> tuple[builtins.list[builtins.list[dict[str, Any]]], builtins.list[str]]:
        """A side's runs' evidence and their names (for notes)."""
        from kbtool.evidence.runs import invalid_runs, runs_in

        path = Path(ref)
        if path.exists():
            runs = runs_in(path, metric_name)
            for why in invalid_runs(runs):
                self.note(f"an invalid run is compared: {why}")
            return [run["evidence"] for run in runs], [run["name"] for run in runs]
        base, rest = self.owner_of(ref)
        found = base.card_or_skill(rest)
        if not isinstance(found, StoredCard) or found.card.kind != "finding":
            raise BadInput(f"{ref}: not an export, a folder of runs, or a finding")
        evidence = found.to_dict().get("evidence") or []
        if not evidence:
            raise BadInput(f"{ref}: a finding with no evidence to compare")
        return [evidence], [found.id]


def _run_body(found: Any, body: str) -> str:
    """The card's body: the generated paragraph, the person's own notes, then each clear change (the rest in one
    line), what could not be compared, and the invalid runs."""
    parts = [found.summary] + ([body.strip()] if body.strip() else [])
    if found.verdicts:
        clear = [line for line in found.verdicts if not line.endswith(": no clear change")]
        unclear = [line[2:].split(": ", 1)[0] for line in found.verdicts if line.endswith(": no clear change")]
        lines = clear + ([f"- no clear change: {', '.join(unclear)}"] if unclear else [])
        heading = f"## Against the baseline: {found.runs} run(s) against {found.baseline_runs}"
        parts.append(heading + "\n\n" + "\n".join(lines))
    if found.notes:
        parts.append("## Not compared\n\n" + "\n".join(f"- {note}" for note in found.notes))
    if found.invalid:
        parts.append("## Invalid runs\n\n" + "\n".join(f"- {why}" for why in found.invalid))
    return "\n\n".join(parts) + "\n"
