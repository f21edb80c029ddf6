"""Hostile values fed into every entry that takes them: a card file's frontmatter, JSON on stdin, an
export, kb.toml, an id, a title, a git URL, a number with its unit. Each ends in a clean refusal (exit 2,
one line on stderr, nothing written) or a plain answer: never an internal error, a traceback or a hang."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from conftest import KB_COMMAND, REPO_ROOT, git, run_kb, tree_state

DATA = REPO_ROOT / "tests" / "data"
DIGITS = "9" * 5000  # more than Python converts to an int (4,300 digits)
DEEP = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"  # deeper than the interpreter's stack
LONG_ID = "a" * 5000  # longer than any file name


@pytest.fixture(autouse=True)
def no_model(monkeypatch):
    """Writes check for duplicates with the embedder: the hashing one here, and no daemon."""
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def refused(result, *words: str) -> bool:
    """Exit 2 and one line on stderr that says kb: error: and each of words."""
    lines = result.stderr.strip().splitlines()
    return (
        result.exit_code == 2
        and len(lines) == 1
        and lines[0].startswith("kb: error: ")
        and all(w in lines[0] for w in words)
    )


def header(**fields: str) -> str:
    """A gap card's text, its frontmatter lines given as they are (YAML), after id, kind and question."""
    lines = {"id": "hostile", "kind": "gap", "title": "T", "question": "q", **fields}
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in lines.items()) + "---\n"


# frontmatter the YAML reader used to crash on (dates that do not exist, year 0, a 5,000-digit integer),
# or took silently (a key given twice keeps the last), or that no card field may hold
HOSTILE_FRONTMATTER = [
    (header(provenance="{created: 2024-02-30}"), "'2024-02-30' is not a date"),
    (header(provenance="{created: 0000-01-01}"), "year 0 is out of range"),
    (header(priority=DIGITS), "an integer of more than 4,300 digits"),
    (header() .replace("question: q\n", "question: q\ntitle: again\n"), "the key 'title' is given twice"),
    (header(title='"a\\0b"'), "title: holds the control character U+0000"),
    (header(title='"\\e[31mred"'), "title: holds the control character U+001B"),
    (header(title='"\\u202Eevil"'), "title: holds the control character U+202E"),
    (header(applies_to='{hardware: "B200\\0"}'), "applies_to.hardware: holds the control character U+0000"),
    (header(id="con"), "'con' is a device name on Windows"),
    (header(id="aux.txt"), "'aux.txt' is a device name on Windows"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "message"), HOSTILE_FRONTMATTER)
def test_hostile_frontmatter_is_refused_from_a_file_and_named_by_lint_in_the_kb(cli, kb, tmp_path, text, message):
    card = tmp_path / "card.md"
    card.write_text(text)
    before = tree_state(kb.root)
    result = cli("add", "gap", "--from-file", str(card))
    assert refused(result, message), result.output
    assert tree_state(kb.root) == before
    by_hand = kb.root / "kb" / "gap" / "by-hand.md"  # dropped into the knowledge base without kb
    by_hand.parent.mkdir(parents=True)
    by_hand.write_text(text.replace("id: hostile", "id: by-hand"))
    assert cli("list").exit_code == 0
    lint = cli("lint", "--skip", "duplicates")
    assert lint.exit_code == 1 and "kb/gap/by-hand.md: [invalid]" in lint.stdout, lint.output


@pytest.mark.parametrize(("title", "code"), [("a\x00b", "U+0000"), ("\x1b[2J\x1b[31mred", "U+001B"),
                                             ("safe \u202eevil", "U+202E"), ("bell\x07", "U+0007")])  # fmt: skip
def test_no_control_character_reaches_a_card_or_a_commit_subject(cli, kb, title, code):
    cli("add", "gap", "--title", "An honest gap")
    before = tree_state(kb.root)
    payload = json.dumps({"title": title, "metrics": {"tpot": 3}})
    for result in (
        cli("add", "gap", "--title", title),
        cli("add-finding", "--title", title, "--metric", "tpot=3ms"),
        cli("add-finding", "--json-input", input=payload),
        cli("add-finding", "--title", "fine", "--metric", "tpot=3ms", "--applies-to", f"hardware={title}"),
        cli("edit", "an-honest-gap", "--title", title),
        cli("refute", "an-honest-gap", "--reason", title),
    ):
        assert refused(result, code), result.output
    assert tree_state(kb.root) == before
    assert "\x1b" not in git(kb.root, "log", "--format=%B")


@pytest.mark.parametrize("entry", ["json-input", "export", "compare", "card-export", "batch", "gold"])
@pytest.mark.parametrize(("text", "message"), [(DEEP, "nested too deeply"),
                                               ('{"a": ' + DIGITS + "}", "more than 4,300 digits")])  # fmt: skip
def test_json_too_deep_or_with_a_5000_digit_integer_is_refused_by_every_reader(cli, kb, tmp_path, entry, text, message):
    suffix = {"card-export": ".jsonl", "batch": ".txt", "gold": ".jsonl"}.get(entry, ".json")
    path = tmp_path / f"input{suffix}"
    path.write_text(text)
    before = tree_state(kb.root)
    result = {
        "json-input": lambda: cli("add-finding", "--json-input", input=text),
        "export": lambda: cli("add-finding", "--title", "t", "--from", str(path)),
        "compare": lambda: cli("compare", str(path), str(path)),
        "card-export": lambda: cli("import", str(path)),
        "batch": lambda: cli("search", "--batch", str(path)),
        "gold": lambda: cli("eval", str(path)),
    }[entry]()
    assert refused(result), result.output
    assert "internal error" not in result.output and message in result.stderr, result.output
    assert tree_state(kb.root) == before


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ("[environment]\ngpu = " + "[" * 5000 + "1" + "]" * 5000 + "\n", "nested too deeply"),
        ("[limits]\ntitle_chars = " + DIGITS + "\n", "more than 4,300 digits"),
        ('[index]\nembedding_model = "/"\n', "is a folder but not a sentence-transformers model"),
        ('[index]\nembedding_model = "hashing-x"\n', "hashing-N takes a dimension"),
        ('[schema]\n"*" = ["policy.json"]\n', "points outside the file, and kb fetches nothing"),
    ],
)
def test_a_hostile_kb_toml_is_named_not_a_crash(cli, kb, monkeypatch, settings, message):
    monkeypatch.delenv("KB_EMBEDDER", raising=False)
    monkeypatch.setenv("KB_DAEMON", "0")
    (kb.root / "policy.json").write_text(json.dumps({"$ref": "https://example.invalid/card.schema.json"}))
    (kb.root / "kb.toml").write_text('[kb]\nname = "test-kb"\nschema_version = 1\n\n' + settings)
    before = tree_state(kb.root)
    # a write reads kb.toml first; the model is what a vector search needs (a write indexes it when it can)
    args = ["search", "--mode", "vector", "anything"] if "embedding" in settings else ["add", "gap", "--title", "A"]
    result = cli(*args)
    assert refused(result, message), result.output
    assert tree_state(kb.root) == before


def test_a_relative_embedding_model_is_the_knowledge_bases_folder_not_the_working_directory(
    kb, tmp_path, monkeypatch, fast_env
):
    from kbtool.search.embeddings import model_location

    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "models" / "mini").mkdir(parents=True)
    (elsewhere / "models" / "mini" / "config.json").write_text("{}")  # the working directory's, not to be taken
    (kb.root / "models" / "mini").mkdir(parents=True)  # the knowledge base's: a folder with no model in it
    monkeypatch.chdir(elsewhere)
    assert model_location("models/mini", kb.root) == str(kb.root / "models" / "mini")
    config = kb.root / "kb.toml"
    config.write_text(
        config.read_text().replace('embedding_model = "all-MiniLM-L6-v2"', 'embedding_model = "models/mini"')
    )
    env = {**fast_env}
    env.pop("KB_EMBEDDER")
    out = subprocess.run([*KB_COMMAND, "--kb", str(kb.root), "search", "--mode", "vector", "x"], cwd=elsewhere,
                         env=env, capture_output=True, text=True, timeout=120)  # fmt: skip
    assert out.returncode == 2 and f"{kb.root / 'models' / 'mini'} is a folder but not a" in out.stderr, out.stderr


@pytest.mark.parametrize("args", [["show"], ["log"], ["edit", "--title", "x"], ["confirm"], ["reopen", "--reason", "r"],
                                  ["retire", "--reason", "r"], ["skill", "show"], ["gate", "run"]])  # fmt: skip
def test_an_id_longer_than_any_file_name_is_no_card(cli, kb, args):
    before = tree_state(kb.root)
    result = cli(*args[:2], LONG_ID, *args[2:]) if args[0] in ("skill", "gate") else cli(args[0], LONG_ID, *args[1:])
    assert refused(result, "no "), result.output
    assert len(result.stderr) < 1200  # the 5,000 characters are not echoed whole
    assert tree_state(kb.root) == before


def test_a_long_card_url_is_a_404_not_a_500(kb, fast_env):
    from web_server import request, running_ui

    with running_ui(kb.root, fast_env) as url:
        for path in (f"cards/{LONG_ID}", f"cards/{LONG_ID}/edit"):
            status, _, _ = request(url + path)
            assert status == 404, path


REMOTE_HELPERS = ["ext::sh -c touch% /tmp/kb-pwned", "fd::17/x.git", "fd::17", "gopher://example.invalid/x.git"]


@pytest.mark.parametrize("url", REMOTE_HELPERS)
def test_a_git_remote_helper_url_is_refused_everywhere_kb_clones(kb, tmp_path, fast_env, url):
    """`fd::17/x.git` made git wait 600 s for a file descriptor; `ext::` runs a command line."""
    before = tree_state(kb.root)
    runs = [
        run_kb(fast_env, kb.root, "import", "--from-kb", url),
        run_kb(fast_env, kb.root, "skill", "install", url, "--to", str(tmp_path / "skills")),
        subprocess.run([*KB_COMMAND, "new-project", "p", "--from", url, "--for", "hardware=H100",
                        "--dir", str(tmp_path / "p")], env=fast_env, capture_output=True, text=True, timeout=60),
    ]  # fmt: skip
    config = kb.root / "kb.toml"
    config.write_text(config.read_text() + f'\n[[sources]]\nname = "team"\nurl = {json.dumps(url)}\n')
    runs.append(run_kb(fast_env, kb.root, "sources", "update"))
    for out in runs:
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1, out.stderr
        assert "kb fetches" in lines[0] or "remote helper" in lines[0], out.stderr
    config.write_text(config.read_text().split("\n[[sources]]")[0])
    assert tree_state(kb.root) == before and not (tmp_path / "p").exists()


def test_a_git_repository_that_is_no_knowledge_base_is_named_not_its_scratch_clone(cli, kb, tmp_path):
    origin = tmp_path / "notes.git"
    work = tmp_path / "notes"
    work.mkdir()
    git(work, "init", "-q")
    (work / "a.md").write_text("# A\n")
    git(work, "add", "a.md")
    git(work, "-c", "user.name=p", "-c", "user.email=p@example.invalid", "commit", "-qm", "a")
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(origin)], check=True)
    for result in (
        cli("import", "--from-kb", str(origin)),
        cli("new-project", "p", "--from", str(origin), "--for", "hardware=H100", "--dir", str(tmp_path / "p")),
    ):
        assert refused(result, str(origin), "no kb.toml"), result.output
        assert "kb-origin-" not in result.stderr  # the scratch clone kb made, which the person never named


@pytest.mark.parametrize(
    ("metric", "message"),
    [
        ("tpot=5 ms extra", "a unit is one word"),
        ("tpot=5ms and more", "a unit is one word"),
        ("tpot=1e-400ms", "too small for a number kb can hold"),
        (f"tpot={DIGITS}ms", "is not a finite number"),
    ],
)
def test_a_metric_value_is_read_whole_or_refused(cli, kb, metric, message):
    before = tree_state(kb.root)
    result = cli("add-finding", "--title", "Odd value", "--metric", metric)
    assert refused(result, message), result.output
    assert len(result.stderr) < 1200
    assert tree_state(kb.root) == before


def test_a_misspelt_metric_name_is_refused_naming_the_columns(cli, kb, tmp_path):
    """M8: --metric-name val_bpc on a session measuring val_bpb recorded (and drew) the first column instead."""
    tsv = tmp_path / "results.tsv"
    tsv.write_text("commit\tval_bpb\tmemory_gb\tstatus\tdescription\nabc\t0.99\t44\tkeep\tbaseline\n")
    before = tree_state(kb.root)
    for result in (
        cli("add-finding", "--title", "session", "--from", str(tsv), "--metric-name", "val_bpc"),
        cli("plot", "--session", str(tsv), "--metric-name", "val_bpc", "--out", str(tmp_path / "s.png")),
    ):
        assert refused(result, "--metric-name val_bpc", "val_bpb, memory_gb"), result.output
    status = cli("add-finding", "--title", "session", "--from", str(tsv), "--metric-name", "status")
    assert refused(status, "holds no numbers")
    assert tree_state(kb.root) == before
    found = json.loads(
        cli("add-finding", "--title", "s", "--from", str(tsv), "--metric-name", "memory_gb", "--json").stdout
    )
    assert [e["metric"] for e in found["evidence"]] == ["memory_gb"] and found["evidence"][0]["value"] == 44


def test_impossible_values_from_exports_are_refused(cli, kb, tmp_path):
    """M9: a negative latency from a results TSV became a confirmed finding; a negative lm-eval stderr, a "NaN"
    mean (replaced by the median) and a list-valued AIPerf metric (dropped) were taken silently."""
    tsv = tmp_path / "results.tsv"
    tsv.write_text("commit\tlatency_ms\tstatus\tdescription\nabc\t-5\tkeep\tfaster than light\n")
    lm_eval = json.loads((DATA / "lm-eval" / "results_2024-10-05T23-16-55.982162.json").read_text())
    task = next(t for t, s in lm_eval["results"].items() if any(k.endswith("_stderr,none") for k in s))
    key = next(k for k in lm_eval["results"][task] if k.endswith("_stderr,none"))
    lm_eval["results"][task][key] = -0.01
    (tmp_path / "results_lm.json").write_text(json.dumps(lm_eval))
    vllm = json.loads((DATA / "vllm" / "run_1_TP8_DP1_CTX1024_C100_P100_O128.json").read_text())
    (tmp_path / "vllm.json").write_text(json.dumps({**vllm, "mean_ttft_ms": "NaN"}))
    aiperf = json.loads((DATA / "aiperf" / "profile_export_aiperf.json").read_text())
    aiperf["time_to_first_token"] = [aiperf["time_to_first_token"]]
    (tmp_path / "profile_export_aiperf.json").write_text(json.dumps(aiperf))
    before = tree_state(kb.root)
    for name, message in [
        ("results.tsv", "latency_ms -5 is negative"),
        ("results_lm.json", "is negative; a standard error is not"),
        ("vllm.json", "mean_ttft_ms: 'NaN' is not a number"),
        ("profile_export_aiperf.json", "time_to_first_token: a list"),
    ]:
        result = cli("add-finding", "--title", "impossible", "--from", str(tmp_path / name))
        assert refused(result, message), (name, result.output)
    by_name = cli("add-finding", "--title", "impossible", "--metric", "latency_ms=-5")
    assert refused(by_name, "value: -5 is negative")
    assert tree_state(kb.root) == before
    assert cli("add-finding", "--title", "Latency went down", "--metric", "latency_delta_ms=-5").exit_code == 0


def test_a_reader_that_stops_early_gets_no_error_from_any_listing(kb, fast_env):
    for n in range(400):  # more than a pipe holds
        path = kb.root / "kb" / "gap" / f"bulk-{n}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"---\nid: bulk-{n}\nkind: gap\ntitle: Bulk gap {n} {'x' * 200}\nquestion: q\n---\n")
    git(kb.root, "add", "-A")
    git(kb.root, "commit", "-qm", "bulk")
    for args in ("list", "list --json", "export", "gaps", "stats"):
        command = f"{' '.join(KB_COMMAND)} --kb {kb.root} {args} | head -1"
        out = subprocess.run(["bash", "-c", command], env=fast_env, capture_output=True, text=True, timeout=120)
        assert out.stderr == "" and out.stdout.strip(), (args, out.stderr)


def test_an_error_is_one_line_and_never_empty():
    from kbtool.model.errors import one_line

    assert one_line("first\nsecond\r\n  third", "BadInput") == "first second third"
    assert one_line("", "BadInput") == "BadInput" and one_line(" \n ", "X") == "X"
    assert one_line("title \x1b[31mred\u202e", "X") == "title \\x1b[31mred\\u202e"
    long = one_line("9" * 5000, "X")
    assert len(long) < 1100 and "characters left out" in long and "\n" not in long


def test_an_internal_error_message_is_one_line(kb, fast_env):
    """Whatever an unforeseen exception says (several lines, nothing), the CLI prints one line."""
    code = (
        "import sys, kbtool.facade.knowledge_base as k\n"
        "def broken(cls, *a, **kw):\n    raise RuntimeError('first line\\nsecond line')\n"
        "k.KnowledgeBase.open = classmethod(broken)\n"
        "from kbtool.surfaces.cli import main\n"
        f"sys.argv = ['kb', '--kb', {str(kb.root)!r}, 'list']\nmain()\n"
    )
    out = subprocess.run([sys.executable, "-c", code], env=fast_env, capture_output=True, text=True, timeout=120)
    lines = out.stderr.strip().splitlines()
    assert out.returncode == 1 and len(lines) == 1 and "first line second line" in lines[0], out.stderr


def test_a_sweep_pairs_each_load_with_the_same_load(cli, kb, tmp_path):
    """M7: a sweep export against itself reported -30.6% TTFT (runs paired across loads). Each load pairs with the
    same load of the other side; where a file holds several runs at one load, nothing is judged. (An export
    against itself is now refused outright: tests/process/test_same_run.py.)"""
    passes = DATA / "vllm" / "results.json"  # six request rates, two passes: against vLLM, then against SGLang
    lines = passes.read_text().splitlines(keepends=True)
    first, second = tmp_path / "vllm-pass.json", tmp_path / "sgl-pass.json"
    first.write_text("".join(lines[:6]))
    second.write_text("".join(lines[6:]))
    result = cli("compare", str(first), str(second), "--json")
    assert result.exit_code == 0, result.stderr
    rows = [r for r in json.loads(result.stdout)["metrics"] if r["metric"] == "ttft"]
    by_rate = {
        str(run["request_rate"]): (run["mean_ttft_ms"], other["mean_ttft_ms"])
        for run, other in zip(map(json.loads, lines[:6]), map(json.loads, lines[6:]), strict=True)
    }
    assert len(rows) == 6 and len({str(r["load"]["request_rate"]) for r in rows}) == 6
    for row in rows:
        rate = str(row["load"]["request_rate"])
        rate = next(k for k in by_rate if k == rate or (k.replace(".0", "") == rate.replace(".0", "")))
        assert (row["candidate"], row["baseline"]) == by_rate[rate]
    # several runs at one load on a side (the two passes in one file): not judged, against another run at each
    # load (the second pass, every TTFT a tenth lower: other numbers, so not the same runs)
    other = tmp_path / "other.json"
    other.write_text("".join(json.dumps({**json.loads(line), "mean_ttft_ms": 0.9 * json.loads(line)["mean_ttft_ms"]})
                             + "\n" for line in lines[6:]))  # fmt: skip
    assert refused(cli("compare", str(passes), str(other), "--json"), "several runs at one load")
    against = cli("compare", str(passes), str(first), "--json")
    assert refused(against, "one run"), against.output  # a file holding the other's runs holds the same runs
