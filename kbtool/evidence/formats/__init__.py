"""The benchmark exports `kb add-finding --from` (and MCP add_finding's artifact) read evidence from.

Each format is a module of this package with one reader behind the protocol in
kbtool.evidence.formats.reader, and the load keys its runs can set; READERS lists them, and the CLI's
help and the MCP tool's description name them from that list. A new format is a module, one entry in
READERS, and its test.

A reader turns an export into {"evidence": [...], "applies_to": {...}, "conditions": {...}}, each
evidence entry carrying the artifact's path and sha256, and a metric the tool marks higher- or
lower-is-better that direction:

- aiperf, aiperf_records: AIPerf's profile export and its per-request records;
- serving: vLLM bench serve results and SGLang bench_serving output (one shape, one reader);
- lm_eval: lm-evaluation-harness results; guidellm: GuideLLM reports; mlperf: MLPerf LoadGen summaries;
- results_tsv: autoresearch-style results (a commit, metric columns, status, description): one finding
  whose evidence is every kept row, so one experiment session is one finding.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kbtool.evidence.formats import aiperf, aiperf_records, guidellm, lm_eval, mlperf, results_tsv, serving
from kbtool.evidence.formats.reader import Reader, json_of
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


def load_keys_of(fmt: Any) -> tuple[str, ...] | None:
    """The load keys runs of a format (by the name they record) can set; None for a format kb does not
    read (a person's own numbers), which could carry anything."""
    for reader in READERS:
        if fmt in reader.load_keys:
            return reader.load_keys[fmt]
    return None


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
