"""add-finding, supersede, gaps, gates and the curation checks, end to end through the CLI."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import REPO_ROOT, commit_count, git, tree_state

AIPERF = REPO_ROOT.parent / "shared" / "corpus" / "aiperf" / "concurrency1" / "profile_export_aiperf.json"
needs_aiperf = pytest.mark.skipif(not AIPERF.is_file(), reason="the shared corpus lies beside the repository in CI")


@pytest.fixture(autouse=True)
def light(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def test_add_finding_from_flags(cli, kb):
    before = commit_count(kb.root)
    result = cli(
        "add-finding",
        "--title",
        "VibeQwen single-stream output 1792 tok/s vs vLLM 943 on B200",
        "--metric",
        "output_throughput=1792tok/s",
        "--baseline",
        "output_throughput=943tok/s",
        "--metric",
        "ttft=12ms",
        "--baseline",
        "ttft=28ms",
        "--applies-to",
        "model=Qwen3.6-35B-A3B",
        "--applies-to",
        "hardware=B200",
        "--applies-to",
        "precision=nvfp4",
        "--applies-to",
        "workload=single-stream",
        "--project",
        "VibeQwen",
        "--tag",
        "speculative",
        "--json",
    )
    assert result.exit_code == 0, result.output
    card = json.loads(result.stdout)
    assert card["status"] == "confirmed" and card["provenance"]["project"] == "VibeQwen"
    tput, ttft = card["evidence"]
    assert (tput["value"], tput["unit"], tput["baseline"], tput["direction"]) == (1792.0, "tok/s", 943.0, "higher")
    assert (ttft["value"], ttft["unit"], ttft["baseline"], ttft["direction"]) == (12.0, "ms", 28.0, "lower")
    # the machine kb wrote it on is where it was recorded; where it was measured, nothing said (no export, no --env)
    assert card["applies_to"]["hardware"] == "B200" and card["recorded_on"]["python"] and not card.get("environment")
    assert commit_count(kb.root) == before + 1
    hits = kb.search("single stream output throughput B200", k=1, mode="bm25").hits
    assert hits[0].id == card["id"]  # the index was updated by the write


def test_a_finding_without_evidence_is_never_written(cli, kb):
    """A finding records what was measured: with nothing measured, nothing is written (and no gap closes)."""
    gap = cli("add", "gap", "--title", "Does FP8 KV cache hurt long context?").stdout.strip()
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "FP8 KV cache may hurt long context", "--closes", gap)
    assert result.exit_code == 2 and "a finding records what was measured" in result.stderr
    assert result.stderr.count("\n") == 1 and tree_state(kb.root) == before
    assert gap in [g["id"] for g in json.loads(cli("gaps", "--json").stdout)["gaps"]]

    # a finding written some other way with nothing measured, named as what closed it, answers nothing
    empty = cli("add", "finding", "--title", "FP8 KV cache is probably fine").stdout.strip()
    assert cli("edit", gap, "--field", f"closed_by={empty}").exit_code == 0
    (still,) = [g for g in json.loads(cli("gaps", "--json").stdout)["gaps"] if g["id"] == gap]
    assert "measured nothing" in still["reopened"]


def test_add_finding_from_json_on_stdin(cli, kb):
    payload = {
        "title": "Sammie: 91 images/s on one H100",
        "metrics": {"images_per_s": "91 images/s"},
        "baseline": {"images_per_s": {"value": 60.7, "unit": "images/s"}},
        "direction": "higher",
        "applies_to": {"model": "SAM 3.1", "hardware": "H100"},
        "tags": ["vision"],
        "project": "Sammie",
    }
    result = cli("add-finding", "--json-input", "--json", input=json.dumps(payload))
    assert result.exit_code == 0, result.output
    card = json.loads(result.stdout)
    assert card["evidence"][0]["value"] == 91.0 and card["evidence"][0]["unit"] == "images/s"
    assert card["applies_to"] == {"model": "SAM 3.1", "hardware": "H100"}


@needs_aiperf
def test_add_finding_from_an_aiperf_export(cli, kb):
    card = json.loads(
        cli("add-finding", "--title", "Mock server, concurrency 1", "--from", str(AIPERF), "--json").stdout
    )
    export = json.loads(AIPERF.read_text())
    metrics = {e["metric"]: e for e in card["evidence"]}
    expected = {k for k, v in export.items() if isinstance(v, dict) and "unit" in v and "avg" in v}
    assert set(metrics) == expected
    ttft = metrics["time_to_first_token"]
    assert ttft["unit"] == "ms" and ttft["value"] == export["time_to_first_token"]["avg"]
    assert ttft["stats"]["p99"] == export["time_to_first_token"]["p99"] and ttft["direction"] == "lower"
    assert ttft["conditions"]["concurrency"] == 1 and ttft["conditions"]["request_count"] == 30
    assert "aiperf profile" in ttft["command"] and len(ttft["artifact"]["sha256"]) == 64
    assert metrics["output_token_throughput"]["direction"] == "higher"
    assert card["applies_to"]["model"] == "mock-model"


@needs_aiperf
@pytest.mark.parametrize("damage", ["truncate", "not-a-number", "no-metrics", "not-aiperf"])
def test_a_damaged_aiperf_export_is_refused(cli, kb, tmp_path, damage):
    text = AIPERF.read_text()
    path = tmp_path / "profile_export_aiperf.json"
    if damage == "truncate":
        path.write_text(text[: len(text) // 2])
    else:
        data = json.loads(text)
        if damage == "not-a-number":
            data["time_to_first_token"]["avg"] = "fast"
        elif damage == "no-metrics":
            data = {k: v for k, v in data.items() if not (isinstance(v, dict) and "avg" in v)}
        else:
            data = {"hello": "world"}
        path.write_text(json.dumps(data))
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "x", "--from", str(path))
    assert result.exit_code == 2 and result.stderr.startswith("kb: error: "), result.output
    assert tree_state(kb.root) == before


def test_add_finding_from_a_results_tsv(cli, kb, tmp_path):
    tsv = tmp_path / "results.tsv"
    tsv.write_text(
        "commit\tmetric\tmemory\tstatus\tdescription\n"
        "a1b2c3d\t0.9979\t44.0\tkeep\tbaseline\n"
        "b2c3d4e\t0.9932\t44.2\tkeep\tincrease LR\n"
        "c3d4e5f\t1.0051\t44.0\tdiscard\tswitch activation\n"
    )
    card = json.loads(
        cli("add-finding", "--title", "LR sweep", "--from", str(tsv), "--metric-name", "val_bpb", "--json").stdout
    )
    assert [(e["value"], e["conditions"]["commit"]) for e in card["evidence"]] == [
        (0.9979, "a1b2c3d"),
        (0.9932, "b2c3d4e"),
    ]
    assert card["evidence"][0]["direction"] == "lower" and card["evidence"][1]["conditions"]["memory_gb"] == 44.2


def test_provenance_records_the_experiment_repository(cli, kb, tmp_path):
    repo = tmp_path / "experiment"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    (repo / "a.txt").write_text("x")
    subprocess.run(["git", "-C", str(repo), "add", "a.txt"], check=True)
    subprocess.run(
        ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"], check=True
    )
    (repo / "a.txt").write_text("changed")
    card = json.loads(cli("add-finding", "--title", "t", "-m", "tpot=0.56ms", "--repo", str(repo), "--json").stdout)
    assert card["repo"]["commit"] == git(repo, "rev-parse", "HEAD").strip() and card["repo"]["dirty"] is True
    assert card["repo"]["name"] == "experiment" and "path" not in card["repo"]  # no machine path travels in git

    # with a remote: its URL, without the credentials a clone URL may carry; artifacts relative to the repository
    subprocess.run(
        ["git", "-C", str(repo), "remote", "add", "origin", "https://bot:ghp_s3cret@github.com/acme/engine.git"],
        check=True,
    )
    export = repo / "runs" / "profile_export_aiperf.json"
    export.parent.mkdir()
    export.write_text(
        AIPERF.read_text()
        if AIPERF.is_file()
        else json.dumps({"aiperf_version": "0.13.0", "time_to_first_token": {"unit": "ms", "avg": 25.3, "p99": 34.6}})
    )
    card = json.loads(cli("add-finding", "--title", "u", "--from", str(export), "--repo", str(repo), "--json").stdout)
    assert card["repo"]["url"] == "https://github.com/acme/engine.git" and card["repo"]["name"] == "engine"
    assert {e["artifact"]["path"] for e in card["evidence"]} == {"runs/profile_export_aiperf.json"}
    assert (
        str(tmp_path) not in (kb.root / card["path"]).read_text()
        and "s3cret" not in (kb.root / card["path"]).read_text()
    )


def test_duplicates_and_contradictions_are_named_and_strict_refuses(cli, kb):
    args = ["--metric", "tpot=11ms", "--baseline", "tpot=13ms", "--applies-to", "hardware=H100"]
    first = cli("add-finding", "--title", "FP8 KV cache cuts TPOT on H100", *args).stdout.strip()
    dup = cli("add-finding", "--title", "FP8 KV cache cuts TPOT on H100 decode", *args)
    assert dup.exit_code == 0 and "likely duplicates of" in dup.stderr and first in dup.stderr
    before = tree_state(kb.root)
    worse = cli(
        "add-finding",
        "--title",
        "FP8 KV cache slows TPOT",
        "--metric",
        "tpot=15ms",
        "--baseline",
        "tpot=13ms",
        "--applies-to",
        "hardware=H100",
        "--strict",
    )
    assert worse.exit_code == 1 and "contradicts" in worse.stderr and first in worse.stderr
    assert tree_state(kb.root) == before
    other_gpu = cli(
        "add-finding",
        "--title",
        "FP8 KV cache slows TPOT on A100",
        "--metric",
        "tpot=15ms",
        "--baseline",
        "tpot=13ms",
        "--applies-to",
        "hardware=A100",
        "--strict",
    )
    assert other_gpu.exit_code == 0  # another scope: no contradiction
    contradicting = cli(
        "add-finding",
        "--title",
        "FP8 KV cache slows TPOT",
        "--metric",
        "tpot=15ms",
        "--baseline",
        "tpot=13ms",
        "--applies-to",
        "hardware=H100",
    )
    assert contradicting.exit_code == 0
    codes = [p["code"] for p in json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]]
    assert "contradiction" in codes


BAD = [
    (["--title", "x", "--metric", "tpot=fast"], "is not a number"),
    (["--title", "x", "--metric", "tpot"], "expected name=value"),
    # a number kb cannot read whole is refused, never cut into a value and a strange unit
    (["--title", "x", "--metric", "tput=1,792tok/s"], "is not a number and a unit"),
    (["--title", "x", "--metric", "tpot=1.2.3ms"], "is not a number and a unit"),
    (["--title", "x", "--metric", "n=0x10"], "is not a number and a unit"),
    (["--title", "x", "--metric", "tpot=5ms=3"], "is not a number and a unit"),
    (["--title", "x", "--baseline", "tpot=1ms"], "no --metric tpot"),
    (["--title", "x", "--applies-to", "gpu=H100"], "applies_to has no field 'gpu'"),
    (["--title", "x", "-m", "a=1", "--closes", "no-such-gap"], "no gap with that id"),
    (["--title", "x", "--direction", "sideways", "-m", "a=1"], "is not 'higher' or 'lower'"),
    (["--title", "x", "-m", "a=1", "--status", "done"], "is not one of"),
    (["-m", "a=1"], "needs a --title"),
    (["--title", "x", "--from", "/no/such/file.json"], "no such file"),
]


@pytest.mark.parametrize(("args", "message"), BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_add_finding_input(cli, kb, args, message):
    before = tree_state(kb.root)
    result = cli("add-finding", *args)
    assert result.exit_code == 2 and message in result.stderr, result.output
    assert tree_state(kb.root) == before


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ("{", "not JSON"),
        ('{"title": "x", "colour": 1}', "unknown field"),
        ('{"title": "x", "metrics": {"tpot": "fast"}}', "is not a number"),
        ("[1]", "JSON object"),
    ],
)
def test_bad_json_input(cli, kb, payload, message):
    result = cli("add-finding", "--json-input", input=payload)
    assert result.exit_code == 2 and message in result.stderr, result.output


def test_closing_a_gap_links_both_in_one_commit(cli, kb):
    gap = cli("add", "gap", "--title", "Does EAGLE help at concurrency 32?", "--field", "priority=high").stdout.strip()
    cli("add", "gap", "--title", "Low one?", "--field", "priority=low")
    assert [g["id"] for g in json.loads(cli("gaps", "--json").stdout)["gaps"]] == [gap, "low-one"]
    before = commit_count(kb.root)
    finding = cli(
        "add-finding", "--title", "EAGLE at c=32", "-m", "throughput=10307tok/s", "--closes", gap
    ).stdout.strip()
    assert commit_count(kb.root) == before + 1
    assert kb.get(gap).card.closed_by == [finding] and kb.get(finding).card.links.closes == [gap]
    assert [g["id"] for g in json.loads(cli("gaps", "--json").stdout)["gaps"]] == ["low-one"]
    not_gap = cli("add-finding", "--title", "y", "-m", "a=1", "--closes", finding)
    assert not_gap.exit_code == 2 and "not a gap" in not_gap.stderr


@pytest.mark.parametrize(
    "undo, why",
    [
        (["refute", "{f}", "--reason", "a cold cache"], "closed only by refuted finding {f}"),
        (["retire", "{f}", "--reason", "the engine changed"], "closed only by retired finding {f}"),
        (["supersede", "{f}", "{other}"], "closed only by superseded finding {f} (by {other})"),
        (["delete"], "closed only by {f} (no such card)"),
    ],
)
def test_a_gap_whose_answers_all_stopped_standing_is_open_again(cli, kb, undo, why):
    """A gap closed only by findings refuted, retired, superseded or deleted since is listed again, saying
    why, and lint warns; the gap's file keeps its closed_by as the record of what once answered it."""
    gap = cli("add", "gap", "--title", "Does EAGLE help at concurrency 32?").stdout.strip()
    f = cli("add-finding", "--title", "EAGLE at c=32", "-m", "throughput=10307tok/s", "--closes", gap).stdout.strip()
    other = cli("add-finding", "--title", "EAGLE at c=32 re-measured", "-m", "throughput=9100tok/s").stdout.strip()
    assert json.loads(cli("gaps", "--json").stdout)["gaps"] == []
    card_file = kb.root / "kb" / "gap" / f"{gap}.md"
    before = card_file.read_text()

    if undo == ["delete"]:
        git(kb.root, "rm", "-q", f"kb/finding/{f}.md")
        git(kb.root, "commit", "-q", "-m", "drop the finding")
    else:
        assert cli(*(arg.format(f=f, other=other) for arg in undo)).exit_code == 0
    reason = why.format(f=f, other=other)

    [listed] = json.loads(cli("gaps", "--json").stdout)["gaps"]
    assert listed["id"] == gap and listed["reopened"] == reason and listed["closed_by"] == [f]
    assert f"reopened: {reason}" in cli("gaps").stdout
    assert card_file.read_text() == before  # nothing rewrote the gap
    problems = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    [warning] = [p for p in problems if p["code"] == "reopened-gap"]
    assert warning["id"] == gap and warning["severity"] == "warning" and reason in warning["message"]
    assert "gaps" in cli("lint", "--help").stdout
    quiet = json.loads(cli("lint", "--json", "--skip", "duplicates", "--skip", "gaps").stdout)["problems"]
    assert "reopened-gap" not in {p["code"] for p in quiet}

    assert cli("reopen", gap, "--reason", "measure it again").exit_code == 0  # a person's reopen, as before
    [listed] = json.loads(cli("gaps", "--json").stdout)["gaps"]
    assert listed["id"] == gap and "reopened" not in listed and listed["closed_by"] == []


def test_a_gap_stays_closed_while_one_of_its_answers_stands(cli, kb):
    gap = cli("add", "gap", "--title", "Does EAGLE help at concurrency 32?").stdout.strip()
    wrong = cli("add-finding", "--title", "EAGLE at c=32", "-m", "tput=1tok/s", "--closes", gap).stdout.strip()
    right = cli("add-finding", "--title", "EAGLE at c=32 again", "-m", "tput=2tok/s", "--closes", gap).stdout.strip()
    assert cli("refute", wrong, "--reason", "a cold cache").exit_code == 0
    assert kb.get(gap).card.closed_by == [wrong, right] and kb.get(right).card.status == "confirmed"
    assert json.loads(cli("gaps", "--json").stdout)["gaps"] == []
    problems = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert "reopened-gap" not in {p["code"] for p in problems}


def test_supersede_links_both_ways_and_search_demotes(cli, kb):
    old = cli("add-finding", "--title", "Chunked prefill 2048 is best", "-m", "ttft=40ms").stdout.strip()
    new = cli("add-finding", "--title", "Chunked prefill 8192 is best", "-m", "ttft=31ms").stdout.strip()
    cli("add", "gap", "--title", "Related?", "--field", f"links.related={old}")
    before = commit_count(kb.root)
    assert cli("supersede", old, new, "--reason", "re-measured with AIPerf").exit_code == 0
    assert commit_count(kb.root) == before + 1 and "re-measured with AIPerf" in git(kb.root, "log", "-1", "--format=%B")
    assert kb.get(old).card.status == "superseded" and kb.get(old).card.links.superseded_by == [new]
    assert kb.get(new).card.links.supersedes == [old]
    hits = {h.id: h for h in kb.search("chunked prefill best", k=3, explain=True).hits}
    assert list(hits)[0] == new and hits[old].explain["demoted"] and list(hits).index(old) > 0
    codes = [p["code"] for p in json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]]
    assert codes == ["superseded-link"]
    assert cli("supersede", old, old).exit_code == 2


GATE = [
    "--field",
    "check.metric=tpot_ms",
    "--field",
    "check.op=<=",
    "--field",
    "check.threshold=12",
    "--field",
    "check.unit=ms",
]


def test_gates_lock_run_and_refuse_edits(cli, kb):
    gate = cli(
        "add",
        "gate",
        "--title",
        "TPOT within baseline",
        "--status",
        "confirmed",
        "--field",
        "check.command=python3 -c \"import json; print(json.dumps({'tpot_ms': 11.2}))\"",
        *GATE,
    ).stdout.strip()
    draft = cli(
        "add", "gate", "--title", "A draft nobody has read", "--field", "check.command=true", *GATE
    ).stdout.strip()
    lock = cli("gate", "lock")
    assert lock.exit_code == 0 and json.loads((kb.root / "kb.lock").read_text())["gates"][gate]["sha256"]
    # without ids, only confirmed gates are locked, and the command says which it skipped and why
    assert draft not in json.loads((kb.root / "kb.lock").read_text())["gates"]
    assert f"skipped {draft}: draft, not confirmed" in lock.stderr
    assert "kb.lock" in git(kb.root, "show", "--name-only", "--format=", "HEAD")
    run = cli("gate", "run", gate)
    assert run.exit_code == 0 and run.stdout.startswith("pass: ") and "11.2 <= 12 ms" in run.stdout
    history = (kb.root / "runs" / "gates" / f"{gate}.jsonl").read_text().splitlines()
    assert json.loads(history[0])["passed"] is True and json.loads(history[0])["value"] == 11.2
    edit = cli("edit", gate, "--field", "check.threshold=20")
    assert edit.exit_code == 2 and "locked" in edit.stderr and "supersede" in edit.stderr
    assert cli("gate", "verify").exit_code == 0
    path = kb.root / "kb" / "gate" / f"{gate}.md"
    path.write_text(path.read_text().replace("threshold: 12.0", "threshold: 20.0"))
    lint = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)
    assert [(p["code"], p["id"]) for p in lint["problems"]] == [("gate-lock", gate)]
    assert "supersede" in lint["problems"][0]["message"]
    assert cli("gate", "verify").exit_code == 1


def test_a_locked_gate_edited_by_hand_or_a_corrupt_lock_runs_nothing(cli, kb, tmp_path):
    marker = tmp_path / "ran"
    gate = cli(
        "add", "gate", "--title", "TPOT gate", "--status", "confirmed",
        "--field", f"check.command=touch {marker} && echo '{{\"tpot_ms\": 11.2}}'", *GATE,
    ).stdout.strip()  # fmt: skip
    assert cli("gate", "lock", gate).exit_code == 0
    shown = cli("gate", "run", gate, "--no-record", "--in", str(tmp_path))
    assert shown.exit_code == 0 and f"kb: running in {tmp_path}: touch {marker}" in shown.stderr
    marker.unlink()
    path = kb.root / "kb" / "gate" / f"{gate}.md"
    original = path.read_text()
    path.write_text(original.replace("threshold: 12.0", "threshold: 20.0"))
    before = tree_state(kb.root)
    edited = cli("gate", "run", gate)
    assert edited.exit_code == 2 and "has changed since it was locked in kb.lock, so nothing was run" in edited.stderr
    assert not marker.exists() and tree_state(kb.root) == before
    path.write_text(original)
    (kb.root / "kb.lock").write_text("{not json")
    corrupt = cli("gate", "run", gate)
    assert corrupt.exit_code == 2 and "kb.lock: not a valid lock file" in corrupt.stderr and not marker.exists()
    unlocked = cli(
        "add", "gate", "--title", "Unlocked", "--status", "confirmed",
        "--field", "check.command=echo '{\"tpot_ms\": 1}'", *GATE,
    ).stdout.strip()  # fmt: skip
    (kb.root / "kb.lock").unlink()
    tried = cli("gate", "run", unlocked, "--no-record")
    assert tried.exit_code == 0 and "is not locked" in tried.stderr


def test_a_draft_gate_runs_nothing_until_a_person_confirms_it(cli, kb, tmp_path):
    marker = tmp_path / "ran"
    command = f"touch {marker} && echo '{{\"tpot_ms\": 1}}'"
    draft = cli("add", "gate", "--title", "Proposed", "--field", f"check.command={command}", *GATE).stdout.strip()
    before = tree_state(kb.root)
    refused = cli("gate", "run", draft)
    assert refused.exit_code == 2 and f"gate {draft!r} is a draft, so nothing was run" in refused.stderr
    assert command in refused.stderr and f"kb confirm {draft}" in refused.stderr
    assert not marker.exists() and tree_state(kb.root) == before
    assert cli("confirm", draft).exit_code == 0
    assert cli("gate", "run", draft).exit_code == 0 and marker.exists()


@pytest.mark.parametrize(
    ("command", "extra", "expect"),
    [
        ("echo 'tpot 13.5 ms'", ["--field", "check.regex=tpot ([0-9.]+)"], "fail: "),
        ("echo 'tpot 9.5 ms'", ["--field", "check.regex=tpot ([0-9.]+)"], "pass: "),
        ("exit 3", [], "the command exited 3"),
        ("echo not json", [], "no JSON object"),
        ("sleep 5", ["--field", "check.timeout_s=0.5"], "timed out"),
    ],
)
def test_gate_run_outcomes(cli, kb, command, extra, expect):
    gate = cli(
        "add", "gate", "--title", "G", "--status", "confirmed", "--field", f"check.command={command}", *GATE, *extra
    ).stdout.strip()  # fmt: skip
    result = cli("gate", "run", gate)
    assert result.exit_code == (0 if expect == "pass: " else 1) and expect in result.stdout, result.output


def test_stale_findings_and_stats(cli, kb):
    cli("add-finding", "--title", "Old result", "-m", "tpot=1ms")
    assert cli("edit", "old-result", "--field", "provenance.created=2020-01-01").exit_code == 0
    stats = json.loads(cli("stats", "--json").stdout)
    assert stats["stale_findings"] == ["old-result"] and stats["by_kind"] == {"finding": 1}
    problems = json.loads(cli("lint", "--json", "--skip", "duplicates").stdout)["problems"]
    assert [p["code"] for p in problems] == ["stale"]
    assert cli("lint", "--skip", "stale", "--skip", "duplicates").exit_code == 0
    assert cli("lint", "--skip", "nonsense").exit_code == 2


def test_lint_finds_duplicates_by_embedding(cli, kb):
    cli("add", "gap", "--title", "Does FP8 KV cache hurt long context accuracy on H100?")
    cli("add", "gap", "--title", "Does FP8 KV cache hurt long context accuracy on H100")
    cli("add", "gap", "--title", "Is CUDA graph capture safe with dynamic shapes?")
    cli("index")
    problems = json.loads(cli("lint", "--json").stdout)["problems"]
    assert [p["code"] for p in problems] == ["duplicate"]


WRITER = """
import sys, kbtool
kb = kbtool.open(sys.argv[1])
for i in range(int(sys.argv[3])):
    title = f"Concurrent finding {sys.argv[2]}-{i}"
    kb.record_finding(kbtool.FindingInput(title=title, metrics={"tpot": f"{1.0 + i}ms"}))
"""


def test_concurrent_add_finding(kb, monkeypatch):
    writers, each = 8, 5
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(kb.root), str(w), str(each)], stderr=subprocess.PIPE, text=True
        )
        for w in range(writers)
    ]
    errors = [p.communicate(timeout=300)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * writers, errors
    assert len(kb.list(kind="finding")) == writers * each and commit_count(kb.root) == 1 + writers * each
    assert subprocess.run(["git", "-C", str(kb.root), "fsck", "--strict"], capture_output=True).returncode == 0
    stats = kb.refresh_index(semantic=False)
    assert stats.added == 0 and stats.updated == 0  # every writer left the index current


def test_command_and_conditions_are_kept_with_each_metric(cli, kb):
    card = json.loads(
        cli(
            "add-finding",
            "--title",
            "c=32 sweep",
            "-m",
            "output_throughput=10307tok/s",
            "-m",
            "tpot=2.9ms",
            "--command",
            "aiperf profile --concurrency 32",
            "--condition",
            "concurrency=32",
            "--condition",
            "workload=chat",
            "--json",
        ).stdout
    )
    for ev in card["evidence"]:
        assert ev["command"] == "aiperf profile --concurrency 32"
        assert ev["conditions"] == {"concurrency": 32, "workload": "chat"}
    before = tree_state(kb.root)
    assert cli("add-finding", "--title", "x", "-m", "tpot=1ms", "--condition", "concurrency").exit_code == 2
    assert tree_state(kb.root) == before
