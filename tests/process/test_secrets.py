"""Text that looks like a credential is never committed without a person saying it is not one, and
kb lint reports any already there (kbtool/store/secrets.py, detect-secrets' rules)."""

from __future__ import annotations

import asyncio
import json

import pytest

import kbtool
from conftest import KB_COMMAND, commit_count, git, run_kb, tree_state

# AWS's documented example credentials (docs.aws.amazon.com, "Managing access keys"): shaped like real ones
ACCESS_KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----\n"


@pytest.mark.parametrize(
    ("args", "found"),
    [
        (["add", "gap", "--title", f"Why does {ACCESS_KEY} fail on H100?"], "AWS Access Key"),
        (["add", "gap", "--title", "Key rotation?", "--body", PEM], "Private Key"),
        (
            [
                "add-finding",
                "--title",
                "bench",
                "-m",
                "tput=10tok/s",
                "--command",
                f"AWS_SECRET_ACCESS_KEY={SECRET_KEY} ./b",
            ],
            "Secret Keyword",
        ),
        (["add", "constraint", "--title", "c", "--field", "rule=password: hunter2hunter2"], "Secret Keyword"),
    ],
)
def test_a_write_holding_a_credential_is_refused_unless_allowed(cli, kb, args, found):
    before = tree_state(kb.root)
    result = cli(*args)
    assert result.exit_code == 2 and found in result.stderr and "nothing was written" in result.stderr, result.output
    assert len(result.stderr.strip().splitlines()) == 1
    assert tree_state(kb.root) == before
    allowed = cli(*args, "--allow-secret")
    assert allowed.exit_code == 0, allowed.output


def test_edit_and_import_are_held_to_it_too(cli, kb, tmp_path):
    cli("add", "gap", "--title", "Clean so far?")
    before = tree_state(kb.root)
    assert cli("edit", "clean-so-far", "--body", f"token {ACCESS_KEY}").exit_code == 2
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "setup.md").write_text(f"# Setup\n\nexport AWS_ACCESS_KEY_ID={ACCESS_KEY}\n")
    result = cli("import", str(docs))
    assert result.exit_code == 2 and "AWS Access Key" in result.stderr
    assert tree_state(kb.root) == before


def test_an_agent_cannot_allow_one(kb):
    agent = kbtool.open(kb.root)  # what kb serve holds: allow_secrets is never set there
    with pytest.raises(kbtool.BadInput, match="looks like a credential"):
        agent.add("gap", f"Leak {ACCESS_KEY}?", agent="mcp:test")


def test_lint_reports_a_credential_already_in_a_card(cli, kb):
    cli("add", "gap", "--title", "Hand edited later")
    path = kb.root / "kb" / "gap" / "hand-edited-later.md"
    path.write_text(path.read_text() + f"\nThe key was {ACCESS_KEY}.\n")
    result = cli("lint", "--skip", "duplicates", "--json")
    problems = json.loads(result.stdout)["problems"]
    assert result.exit_code == 1 and [(p["code"], p["id"]) for p in problems] == [("secret", "hand-edited-later")]
    assert "AWS Access Key" in problems[0]["message"]
    assert cli("lint", "--skip", "duplicates", "--skip", "secrets").exit_code == 0


def test_prose_about_passwords_and_digests_is_not_a_secret(cli, kb):
    body = (
        "Run `ssh -o PasswordAuthentication=no worker-0 hostname` to check the setup.\n\n"
        "Artifact sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08, commit "
        "3c4a82d1f0e1b2c3d4e5f60718293a4b5c6d7e8f.\n"
    )
    assert cli("add", "gap", "--title", "Is the secret of fast decode batching?", "--body", body).exit_code == 0


# --- every text kb writes or commits (issue: a second adversarial run) -------------------------------------

# shaped like real tokens of the services, made up here
GITHUB_TOKEN = "ghp_Zx9Qw3Er5Ty7Ui1Op3As5Df7Gh9Jk1Lz2Xc4"
HF_TOKEN = "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"
OPENAI_KEY = "sk-proj-T4kq9ZrW2mXv8LpN3cYd6HbJ1sFg5QeA"


def refused(result) -> bool:
    """One line on stderr saying what looks like a credential and that nothing was written, exit 2."""
    lines = result.stderr.strip().splitlines()
    return (
        result.exit_code == 2
        and len(lines) == 1
        and "looks like a credential" in lines[0]
        and "nothing was written" in lines[0]
        and "Traceback" not in result.output
    )


@pytest.mark.parametrize(
    "args",
    [
        ["add", "gap", "--title", "Tagged?", "--tag", "decode", "--tag", GITHUB_TOKEN],
        ["add", "gap", "--title", "Scoped?", "-f", "applies_to.engine=vllm", "-f", f"applies_to.engine={ACCESS_KEY}"],
        ["add-finding", "--title", "bench", "-m", "tput=10tok/s", "--tag", HF_TOKEN],
        ["add", "constraint", "--title", "c", "--field", f"rule=use {OPENAI_KEY}"],
    ],
    ids=["tag", "applies_to list", "finding tag", "an OpenAI project key"],
)
def test_a_credential_in_a_yaml_list_is_refused_unless_allowed(cli, kb, args):
    before = tree_state(kb.root)
    result = cli(*args)
    assert refused(result), result.output
    assert tree_state(kb.root) == before
    assert cli(*args, "--allow-secret").exit_code == 0


def test_an_imported_export_with_a_credential_in_a_list_is_refused(kb, fast_env, tmp_path):
    card = {"id": "tagged-gap", "kind": "gap", "title": "Tagged?", "question": "Why?", "tags": ["ok", GITHUB_TOKEN]}
    scoped = {**card, "id": "scoped-gap", "tags": [], "applies_to": {"hardware": ["H100", ACCESS_KEY]}}
    before = tree_state(kb.root)
    for i, one in enumerate((card, scoped)):
        export = tmp_path / f"cards-{i}.jsonl"
        export.write_text(json.dumps({"card": one, "body": "why"}) + "\n")
        result = run_kb(fast_env, kb.root, "import", str(export))
        assert result.returncode == 2 and "looks like a credential" in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    assert tree_state(kb.root) == before


@pytest.mark.parametrize("verb", ["refute", "retire", "confirm"])
def test_a_reason_holding_a_credential_never_reaches_a_commit_message(cli, kb, verb):
    cli("add", "gap", "--title", "Reviewed later?")
    before = tree_state(kb.root)
    args = [verb, "reviewed-later", "--reason", f"the old key {GITHUB_TOKEN} leaked in the log"]
    result = cli(*args)
    assert refused(result), result.output
    assert tree_state(kb.root) == before
    assert cli(*args, "--allow-secret").exit_code == 0  # a person says it is not one


def test_supersede_reason_is_checked_too(cli, kb):
    cli("add", "gap", "--title", "Old question?")
    cli("add", "gap", "--title", "New question?")
    before = tree_state(kb.root)
    assert refused(cli("supersede", "old-question", "new-question", "--reason", f"password: {SECRET_KEY}"))
    assert tree_state(kb.root) == before


def test_skill_new_and_import_are_checked(cli, kb, tmp_path):
    before = tree_state(kb.root)
    described = cli("skill", "new", "call-hub", "--description", f"Call the hub with {HF_TOKEN}. Use when asked.")
    assert refused(described), described.output
    body = tmp_path / "body.md"
    body.write_text(f"# Steps\n\n1. `export GITHUB_TOKEN={GITHUB_TOKEN}`\n")
    assert refused(
        cli("skill", "new", "call-hub", "--description", "Call the hub. Use when asked.", "--body-file", str(body))
    )
    folder = tmp_path / "src" / "fetch-weights"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: fetch-weights\ndescription: Fetch weights. Use when asked.\n---\n\nRun it.\n"
    )
    (folder / "scripts" / "fetch.sh").write_text(f"#!/bin/sh\nexport HF_TOKEN={HF_TOKEN}\nhf download x\n")
    imported = cli("skill", "import", str(folder))
    assert refused(imported) and "skills/fetch-weights/scripts/fetch.sh" in imported.stderr, imported.output
    assert tree_state(kb.root) == before
    assert cli("skill", "import", str(folder), "--allow-secret").exit_code == 0


def test_a_token_inside_a_binary_skill_asset_is_refused(cli, kb, tmp_path):
    folder = tmp_path / "src" / "cached-client"
    (folder / "assets").mkdir(parents=True)
    (folder / "SKILL.md").write_text("---\nname: cached-client\ndescription: A client. Use when asked.\n---\n\nRun.\n")
    (folder / "assets" / "session.bin").write_bytes(b"\x00\x93\xff" + f"auth={HF_TOKEN}".encode() + b"\x00\x01")
    before = tree_state(kb.root)
    imported = cli("skill", "import", str(folder))
    assert refused(imported) and "Hugging Face Token in binary content" in imported.stderr, imported.output
    assert tree_state(kb.root) == before


def test_mcp_writes_are_checked_and_cannot_be_allowed(kb, fast_env):
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    mine = kb.add("gap", "Mine to withdraw?", agent="lab-bot")  # the server's agent: $KB_AGENT below
    before = commit_count(kb.root)
    cases = [
        ("add_card", {"kind": "gap", "title": "Tagged?", "tags": ["decode", GITHUB_TOKEN]}),
        ("add_card", {"kind": "gap", "title": "Scoped?", "fields": {"applies_to": {"engine": ["vllm", ACCESS_KEY]}}}),
        ("add_finding", {"title": "t", "metrics": {"tpot": "9ms"}, "applies_to": {"hardware": [HF_TOKEN]}}),
        ("add_finding", {"title": "t", "metrics": {"tpot": "9ms"}, "tags": [OPENAI_KEY]}),
        ("set_status", {"id": mine.id, "status": "retired", "reason": f"rotated {GITHUB_TOKEN}"}),
        ("add_card", {"kind": "gap", "title": "Allowed?", "tags": [GITHUB_TOKEN], "allow_secret": True}),
    ]

    async def go():
        params = StdioServerParameters(
            command=KB_COMMAND[0],
            args=[*KB_COMMAND[1:], "--kb", str(kb.root), "serve"],
            env={**fast_env, "KB_AGENT": "lab-bot"},
        )
        async with Client(params, read_timeout_seconds=60) as client:
            for tool, args in cases:
                result = await client.call_tool(tool, args)
                assert result.is_error, (tool, args)
                text = result.content[0].text
                assert "looks like a credential" in text or "allow_secret" in text, (tool, text)

    asyncio.run(go())
    assert commit_count(kb.root) == before


LEAK = (
    f"connecting with {GITHUB_TOKEN}\n"
    f"AWS_SECRET_ACCESS_KEY={SECRET_KEY}\n"
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAABlwAAAAdzc2gtcn\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def test_a_gate_run_whose_output_holds_a_credential_is_recorded_redacted(cli, kb, tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "leak.txt").write_text(LEAK)
    check = {
        "command": "cat leak.txt; cat leak.txt >&2; echo '{\"tpot_ms\": 9}'",
        "metric": "tpot_ms",
        "op": "<=",
        "threshold": 12,
    }
    gate = kb.add("gate", "TPOT under 12 ms", status="confirmed", values={"check": check}).id
    before = commit_count(kb.root)
    run = cli("gate", "run", gate, "--in", str(project))
    assert run.exit_code == 0, run.output
    assert commit_count(kb.root) == before + 1  # recorded all the same
    log = (kb.root / "runs" / "gates" / f"{gate}.jsonl").read_text()
    record = json.loads(log)
    for text in (record["stdout"], record["stderr"]):
        assert "[redacted" in text and "connecting with" in text and '"tpot_ms": 9' in record["stdout"]
    for secret in (GITHUB_TOKEN, SECRET_KEY, "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"):
        assert secret not in log
    assert cli("gate", "run", gate, "--in", str(project)).exit_code == 0  # appends to a log with redactions
    assert commit_count(kb.root) == before + 2
    assert json.loads(cli("lint", "--skip", "duplicates", "--json").stdout)["problems"] == []


def test_lint_reports_a_credential_anywhere_in_the_tracked_tree(cli, kb):
    kb.add("gap", "Tagged by hand?")
    card = kb.root / "kb" / "gap" / "tagged-by-hand.md"
    card.write_text(card.read_text().replace("title:", f"tags:\n- {GITHUB_TOKEN}\ntitle:", 1))
    files = {
        "runs/gates/some-gate.jsonl": json.dumps({"stdout": f"token={HF_TOKEN}"}) + "\n",
        "skills/fetch/scripts/fetch.sh": f"#!/bin/sh\nexport GITHUB_TOKEN={GITHUB_TOKEN}\n",
        "notes/setup.md": f"export OPENAI_API_KEY={OPENAI_KEY}\n",
        "examples/settings.yaml": f"keys:\n- {ACCESS_KEY}\n",
    }
    for rel, text in files.items():
        (kb.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (kb.root / rel).write_text(text)
    git(kb.root, "add", "--all")
    git(kb.root, "commit", "-qm", f"by hand\n\nwith the key {ACCESS_KEY}")
    result = cli("lint", "--skip", "duplicates", "--skip", "skills", "--json")
    problems = [p for p in json.loads(result.stdout)["problems"] if p["code"] == "secret"]
    assert result.exit_code == 1
    errors = {p["path"] for p in problems if p["severity"] == "error"}
    assert errors == {"kb/gap/tagged-by-hand.md", *files}, problems
    warned = [p for p in problems if p["severity"] == "warning"]
    assert len(warned) == 1 and warned[0]["path"].startswith("commit ") and "AWS Access Key" in warned[0]["message"]
    assert all(s not in result.stdout for s in (GITHUB_TOKEN, HF_TOKEN, OPENAI_KEY, ACCESS_KEY))  # never shown

    # a path that holds examples on purpose is left out by name (kb.toml [curation] secrets_ignore)
    config = kb.root / "kb.toml"
    config.write_text(
        config.read_text().replace("[curation]\n", '[curation]\nsecrets_ignore = ["notes/*", "examples/*"]\n')
    )
    quieter = json.loads(cli("lint", "--skip", "duplicates", "--skip", "skills", "--json").stdout)["problems"]
    assert not {"notes/setup.md", "examples/settings.yaml"} & {p["path"] for p in quieter}


PLACEHOLDERS = [
    'client = InferenceClient(base_url="http://127.0.0.1:8080", api_key="hf_XXX")',
    'api_key="hf_XXX"',
    "api_key = 'sk-xxxx'",
    'OPENAI_API_KEY="sk-proj-xxxxxxxxxxxxxxxxxxxxxxxx"',
    'token="<YOUR_TOKEN>"',
    'password="..."',
    'api_key="sk-..."',
    'api_key="aaaaaaaaaaaa"',
    'api_key="${HF_TOKEN}"',
    'api_key="{{ secrets.HF_TOKEN }}"',
    'api_key="your-api-key-here"',
    'secret = "YOUR_SECRET"',
    "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "GITHUB_TOKEN=ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
    "aws_access_key_id = AKIAXXXXXXXXXXXXXXXX",
    'password: "********"',
]
REAL_LOOKING = [
    f'api_key="{HF_TOKEN}"',
    f"export HF_TOKEN={HF_TOKEN}",
    f'OPENAI_API_KEY="{OPENAI_KEY}"',
    f"GITHUB_TOKEN={GITHUB_TOKEN}",
    f"aws_access_key_id = {ACCESS_KEY}",
    'password = "hunter2hunter2"',
]


@pytest.mark.parametrize("line", PLACEHOLDERS)
def test_a_documentation_placeholder_is_not_a_credential(line):
    from kbtool.store.secrets import find_secrets

    assert find_secrets(f"# Setup\n\n```python\n{line}\n```\n") == []
    assert find_secrets(f"---\nid: x\nrule: {json.dumps(line)}\ntags:\n- {json.dumps(line)}\n---\n\n{line}\n") == []


@pytest.mark.parametrize("line", REAL_LOOKING)
def test_a_real_looking_credential_still_is(line):
    from kbtool.store.secrets import find_secrets

    assert find_secrets(f"# Setup\n\n```python\n{line}\n```\n")


def test_importing_documents_with_placeholders_writes_them(kb, fast_env, tmp_path):
    docs = tmp_path / "tgi"
    docs.mkdir()
    (docs / "consuming_tgi.md").write_text(
        "# Consuming TGI\n\n```python\nfrom huggingface_hub import InferenceClient\n\n"
        'client = InferenceClient(base_url="http://localhost:8080/v1/", api_key="hf_XXX")\n```\n\n'
        'Or with OpenAI: `OpenAI(base_url=..., api_key="sk-xxxx")`, or `token="<YOUR_TOKEN>"`.\n'
    )
    imported = run_kb(fast_env, kb.root, "import", str(docs))
    assert imported.returncode == 0, imported.stderr
    (docs / "consuming_tgi.md").write_text(f'# Consuming TGI\n\n`api_key="{HF_TOKEN}"`\n')
    before = tree_state(kb.root)
    again = run_kb(fast_env, kb.root, "import", str(docs))
    assert again.returncode == 2 and "looks like a credential" in again.stderr
    assert tree_state(kb.root) == before


def test_lint_keeps_what_it_found_by_content_and_judges_what_changed(cli, kb):
    """The scan of an unchanged tree is kept in .kb/ (line and kind, never the value); a changed file, a new
    commit or a hand-edited cache is judged anew."""

    def secrets_found() -> list[str]:
        problems = json.loads(cli("lint", "--skip", "duplicates", "--json").stdout)["problems"]
        return sorted(p["path"] for p in problems if p["code"] == "secret")

    notes = kb.root / "notes.md"
    notes.write_text("# Notes\n\nNothing to hide.\n")
    git(kb.root, "add", "notes.md")
    git(kb.root, "commit", "-qm", "notes")
    assert secrets_found() == []
    cache = kb.root / ".kb" / "secrets-scan.json"
    assert cache.exists()
    notes.write_text(f"# Notes\n\nexport HF_TOKEN={HF_TOKEN}\n")
    assert secrets_found() == ["notes.md"]
    assert HF_TOKEN not in cache.read_text()
    git(kb.root, "commit", "-qam", f"oops\n\nHF_TOKEN={HF_TOKEN}")
    assert secrets_found() == ["commit " + git(kb.root, "rev-parse", "HEAD")[:12], "notes.md"]
    cache.write_text(json.dumps({"rules": "whatever", "files": {"x": [["not", "a finding"]]}}))
    assert len(secrets_found()) == 2
    cache.write_text("{not json")
    assert len(secrets_found()) == 2
    from kbtool.curation.committed_secrets import _rules

    cache.write_text(json.dumps({"rules": _rules(), "files": {"x": "nope"}, "head": 3, "messages": [["a", "b"]]}))
    assert len(secrets_found()) == 2
