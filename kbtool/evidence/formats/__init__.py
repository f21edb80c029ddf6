"""The benchmark exports `kb add-finding --from` (and MCP add_finding's artifact) read evidence from.

Each format is a module of this package with one reader behind the protocol in
kbtool.evidence.formats.reader, and the load keys its runs can set; READERS lists them, and the CLI's
help and the MCP tool's description name them from that list. A new format is a module, one entry in
READERS, and its test.

A reader turns an export into {"evidence": [...], "applies_to": {...}, "conditions": {...}}, each
evidence entry carrying the artifact's path and sha256, and a metric the tool marks higher- or
lower-is-better that direction. Each declares, per format it reads, its load keys and its headline (what
its runs are judged by first: reader.Headline):

- aiperf, aiperf_records: AIPerf's profile export and its per-request records;
- serving: vLLM bench serve results and SGLang bench_serving output (one shape, one reader);
- lm_eval: lm-evaluation-harness results; guidellm: GuideLLM reports; mlperf: MLPerf LoadGen summaries;
- results_tsv: autoresearch-style results (a commit, metric columns, status, description): one finding
  whose evidence is every kept row, so one experiment session is one finding.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from kbtool.evidence.formats import aiperf, aiperf_records, guidellm, lm_eval, mlperf, results_tsv, serving
from kbtool.evidence.formats.reader import Headline, Reader, json_of
from kbtool.evidence.values import read_artifact
from kbtool.model.errors import BadInput
from kbtool.model.parsing import Unparsable, json_document

READERS: tuple[Reader, ...] = (
    aiperf.READER,
    aiperf_records.READER,
    serving.READER,
    lm_eval.READER,
    guidellm.READER,
    mlperf.READER,
    results_tsv.READER,
)


# what a run was asked to do, by the names any format gives it: never a headline metric (AIPerf's request_count)
LOAD_INPUTS = frozenset(key for reader in READERS for keys in reader.load_keys.values() for key in keys)


def load_keys_of(fmt: Any) -> tuple[str, ...] | None:
    """The load keys runs of a format (by the name they record) can set; None for a format kb does not
    read (a person's own numbers), which could carry anything."""
    for reader in READERS:
        if fmt in reader.load_keys:
            return reader.load_keys[fmt]
    return None


def headline_of(evidence: Sequence[Mapping[str, Any]]) -> list[int]:
    """The headline entries of a finding's (or a run's) evidence, by index, in order: each format's own
    (Reader.headline, by the `format` its entries record), never a load input. None for entries of no
    declared format (a person's own numbers, a results TSV): their title says what matters."""
    by_format: dict[str, list[int]] = {}
    for n, entry in enumerate(evidence):
        by_format.setdefault(str((entry.get("conditions") or {}).get("format")), []).append(n)
    chosen: list[int] = []
    for fmt, indices in by_format.items():
        rule = _headline(fmt)
        if rule is not None:
            picked = [indices[k] for k in rule.choose([evidence[n] for n in indices])]
            chosen += [n for n in picked if evidence[n].get("metric") not in LOAD_INPUTS]
    return chosen


def headline_names() -> tuple[str, ...]:
    """Every metric a format's headline names by its places, in order (MCP compare ranks its rows by them)."""
    names = (n for r in READERS for rule in r.headline.values() for n in rule.names() if n not in LOAD_INPUTS)
    return tuple(dict.fromkeys(names))


def _headline(fmt: str) -> Headline | None:
    return next((r.headline[fmt] for r in READERS if fmt in r.headline), None)


def described() -> str:
    """'AIPerf profile_export_aiperf.json, ... or a results TSV (...)': the formats, as help texts name them."""
    names = [r.description for r in READERS]
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} or {names[-1]}"


def reader_for(path: Path) -> Reader:
    """The reader for a file, by what it holds (several formats are JSON); its ending narrows the choice."""
    candidates = [r for r in READERS if path.suffix.lower() in r.suffixes]
    if not candidates:
        known = "; ".join(f"{r.name} ({', '.join(r.suffixes)})" for r in READERS)
        raise BadInput(f"{path}: not a benchmark export kb reads ({known})")
    text, _ = read_artifact(path)
    if path.suffix.lower() == ".json":
        try:
            json_document(text)
        except Unparsable as exc:
            lines = [line for line in text.splitlines() if line.strip()]
            if not (len(lines) > 1 and all(json_of(line) is not None for line in lines)):  # not JSON Lines either
                cut = "; is the export cut short?" if str(exc).startswith("it breaks") else ""
                raise BadInput(f"{path}: not valid JSON: {exc}{cut}") from None
    for reader in candidates:
        if reader.matches(path, text):
            return reader
    names = ", ".join(r.description for r in candidates)
    raise BadInput(f"{path}: not a format kb recognises among those ending {path.suffix} ({names})")
