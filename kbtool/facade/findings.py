"""The part of the facade that records what experiments measured, and compares and plots runs.

A finding comes from evidence (kbtool.evidence), is planned in kbtool.facade.finding_plan, and is read and written
here, in one commit with the gap here that it closes. Evidence is compared (kb compare: a side is an export, a
folder of runs or a finding) and drawn (kb plot)."""

from __future__ import annotations

import builtins
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.cards import CardBase, Finding
from kbtool.model.contracts import Compared, Comparison, FindingAdded, FindingInput, Plotted, relations
from kbtool.model.errors import AmbiguousId, BadInput, CardNotFound, InvalidCard, OutsidePath
from kbtool.model.records import StoredCard, gap_of
from kbtool.store.files import ReadFrom

if TYPE_CHECKING:
    from kbtool.evidence.repeats import Floors
    from kbtool.evidence.run_evidence import RunEvidence


class Findings(KnowledgeBaseCore):
    """Findings from evidence, their supersession and status, and evidence compared and drawn."""

    def record_finding(
        self,
        finding: FindingInput,
        agent: str | None = None,
        strict: bool = False,
        client: str | None = None,
        read_from: ReadFrom | None = None,
    ) -> FindingAdded:
        """Record a measured finding in one commit (`kb add-finding`, MCP add_finding), the keyword index
        updated; returns its id and its likely duplicates and contradictions among existing findings.

        The metrics apply their command and conditions to every entry; with runs (finding.artifact and
        baseline_from), each metric is combined per load and judged against the baseline at the same load
        (kbtool.evidence.run_evidence); runs at different loads are refused unless ignore_conditions names
        the condition. Nothing measured, nothing written: BadInput. With strict, likely duplicates or
        contradictions refuse it (CheckFailed). An agent's finding is tentative until reviewed
        (kbtool.curation.review), and names the client it came through (client, a label). read_from: where the
        exports may be read from (an agent's: kbtool.store.files.ReadFrom); None, anywhere. What to record is
        planned in kbtool.facade.finding_plan; here it is read and written."""
        from kbtool.facade.finding_plan import card_plan, measured, requested

        said = len(self.notices)
        asked = requested(finding, agent)
        found = measured(finding, asked, self._runs(finding, read_from))
        for note in found.notes:
            self.note(note)
        repo = _repository(finding.repo)
        closes, gap = self._open_gap(finding.closes) if finding.closes else (None, None)
        existing = [c.data for c in self.summaries(kind="finding")]
        # where the card was written; where it was measured is what its exports and its writer say
        recorded_on = self.machine_environment()
        plan = card_plan(finding, found, recorded_on, repo, closes, agent, existing, strict, client)
        stored = self._create(plan.data, plan.body, origin="new finding", extra_writes=self._closing(gap))
        self._refresh_lexical()
        if closes and not (stored.card.status == "confirmed" and agent is None):
            # a gap closes on a verdict (kbtool/curation/gap_standing.py): say so where the writer is looking
            self.note(
                f"{closes} stays open, answered by {stored.id} awaiting review, until it is confirmed "
                f"(kb confirm {stored.id}, or a locked gate's pass: kb gate run GATE --confirms {stored.id})"
            )
        evidence = stored.card.evidence if isinstance(stored.card, Finding) else []
        return FindingAdded(
            id=stored.id,
            path=stored.path,
            status=stored.card.status,
            related=relations(plan.related),
            evidence=len(evidence),
            judged=sum(1 for e in evidence if e.baseline is not None),
            notes=self.notices[said:],
        )

    def _runs(self, finding: FindingInput, read_from: ReadFrom | None = None) -> RunEvidence | None:
        """The benchmark runs the finding names, read and judged; None when it names none. With read_from, a
        path outside its folders is refused before any is read."""
        runs = finding.artifacts()
        if not runs:
            return None
        from kbtool.evidence.run_evidence import evidence_from_runs

        named = [*runs, *(finding.baseline_from or [])]
        if read_from is not None:
            for path in named:
                read_from.check(path, "an export")
        return evidence_from_runs(
            [Path(run) for run in runs],
            [Path(run) for run in finding.baseline_from or []],
            finding.metric_name or "metric",
            Path(finding.repo) if finding.repo else None,
            finding.ignore_conditions,
            self._noise_floors,
        )

    def _closing(self, gap: StoredCard | None) -> Callable[[CardBase], dict[str, str]] | None:
        """The gap a finding closes, rewritten in the same commit to name the finding in closed_by."""
        if gap is None:
            return None

        def closed(card: CardBase) -> dict[str, str]:
            update = {"closed_by": [*gap_of(gap).closed_by, card.id]}
            return {gap.path: self._render(gap.card.model_copy(update=update), gap.body, gap.path)}

        return closed

    def _open_gap(self, ref: str) -> tuple[str, StoredCard | None]:
        """(the id the finding's links.closes names, the gap here to name the finding in closed_by). A source's
        gap (SOURCE:ID) is closed for this project alone: the link names it and the source is never written
        (gaps leaves it out here); when this project holds a copy of it, the copy is the gap closed."""
        if ":" in ref:
            name = ref.partition(":")[0]
            base, rest = self.owner_of(ref)
            try:
                theirs = base.get(rest)
            except CardNotFound:
                raise CardNotFound(f"--closes {ref}: source {name} has no gap with that id") from None
            _check_gap(ref, theirs)
            copy = self.copied_originals().get(f"{name}:{theirs.id}")
            if copy is None:
                return f"{name}:{theirs.id}", None
            ref = copy
        try:
            gap = self.get(ref)
        except CardNotFound:
            raise CardNotFound(f"--closes {ref}: no gap with that id") from None
        _check_gap(ref, gap)
        return gap.id, gap

    def compare(
        self,
        candidate: str,
        baseline: str,
        metric_name: str = "metric",
        ignore: Iterable[str] = (),
        read_from: ReadFrom | None = None,
    ) -> Comparison:
        """`kb compare`: each metric both sides measured under the same load, with intervals and a verdict
        (kbtool.evidence.repeats). A side is an export, a folder of exports (one run each), or a finding's id.
        Runs at different loads are refused, naming the condition (kbtool.evidence.pairing), unless its key is
        in ignore; what could not be compared is in the notes. read_from: where a side's path may be read
        (an agent's); None, anywhere."""
        from kbtool.evidence.repeats import compare
        from kbtool.evidence.runs import model_of
        from kbtool.evidence.same_run import refuse_same_runs

        ours_read = self._runs_of(candidate, metric_name, read_from, "candidate")
        theirs_read = self._runs_of(baseline, metric_name, read_from, "baseline")
        refuse_same_runs(ours_read, theirs_read)  # a run against itself, or given twice, is refused
        ours, our_names = [r["evidence"] for r in ours_read], [r["name"] for r in ours_read]
        theirs, their_names = [r["evidence"] for r in theirs_read], [r["name"] for r in theirs_read]
        our_model = model_of(ours_read)
        notes: builtins.list[str] = []
        rows = compare(ours, theirs, ignore, notes, (our_names, their_names), self._noise_floors(our_model))
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

    def _noise_floors(self, model: str | None) -> Floors:
        """The noise floor each entry has in this knowledge base's repeated runs (kbtool.evidence.noise_floor)."""
        from kbtool.evidence.noise_floor import noise_floors

        return noise_floors(((f.id, f.data) for f in self.summaries(kind="finding")), model)

    def _runs_of(
        self, ref: str, metric_name: str, read_from: ReadFrom | None = None, side: str = "candidate"
    ) -> builtins.list[dict[str, Any]]:
        """A side's runs: each one's evidence, name (for notes), scope and identity (kbtool.evidence.same_run);
        a finding is one, known by its id and its exports' sha256. A path outside read_from's folders is never
        looked at: the side is a finding's id, or refused in words that do not say whether the path exists."""
        from kbtool.evidence.runs import invalid_runs, runs_in

        path = Path(ref)
        readable = read_from is None or read_from.allows(ref)
        if readable and path.exists():
            runs = runs_in(path, metric_name)
            for why in invalid_runs(runs):
                self.note(f"an invalid run is compared: {why}")
            return runs
        try:
            base, rest = self.owner_of(ref)
            found = base.card_or_skill(rest)
        except (CardNotFound, AmbiguousId, OutsidePath):
            if readable or read_from is None:
                raise
            raise OutsidePath(
                f"{side}: not a finding of this knowledge base, and {read_from.refusal}; nothing was read"
            ) from None
        if not isinstance(found, StoredCard) or found.card.kind != "finding":
            raise BadInput(f"{ref}: not an export, a folder of runs, or a finding")
        data = found.to_dict()
        evidence = data.get("evidence") or []
        if not evidence:
            raise BadInput(f"{ref}: a finding with no evidence to compare")
        identity = {f"finding:{found.id}": f"the same finding {found.id}"}
        for entry in evidence:
            for artifact in [entry.get("artifact"), *(entry.get("artifacts") or [])]:
                if artifact:
                    identity[f"sha256:{artifact['sha256']}"] = f"the same export, sha256 {artifact['sha256'][:12]}"
        return [{"evidence": evidence, "name": found.id, "identity": identity, "applies_to": data.get("applies_to")}]


def _repository(path: str | None) -> dict[str, Any] | None:
    """The experiment repository's state to record; a repository with no commit yet records nothing, a
    mistyped path is refused."""
    if path is None:
        return None
    from kbtool.evidence.provenance import repo_state, require_repository

    state = repo_state(Path(path))
    if state is None:
        require_repository(Path(path))
    return state or None


def _check_gap(ref: str, gap: StoredCard) -> None:
    if gap.card.kind != "gap":
        raise InvalidCard(f"--closes {ref}: {gap.id} is a {gap.card.kind}, not a gap")
