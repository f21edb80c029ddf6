"""Text that looks like a credential is never committed without a person saying it is not one, and
kb lint reports any already there (kbtool/loop/secrets.py, detect-secrets' rules)."""

from __future__ import annotations

import json

import pytest

import kbtool
from conftest import tree_state

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
