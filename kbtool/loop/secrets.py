"""Credentials in cards: findings travel through git to every clone, so a key pasted into a title, a
command or a body must be stopped before it is committed, and reported if it already was.

The rules are Yelp's detect-secrets (a maintained detector, not patterns of our own): the plugins
for cloud keys, API tokens of the common services, private keys, JWTs, credentials in URLs, and
secret-named assignments (`password: ...`, `AWS_SECRET_ACCESS_KEY=...`), with its false-positive
filters. Its high-entropy-string plugins are left out: a card is full of sha256 digests and commit
ids that they would flag.
"""

from __future__ import annotations

import functools
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

# every detect-secrets plugin but the entropy ones (digests) and public IP addresses (benchmark hosts)
PLUGINS = (
    "ArtifactoryDetector",
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "KeywordDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
)


# what a secret-named setting holds when it is a switch, not a secret: `PasswordAuthentication=no`
# (an ssh option the ml-engineering book shows) is not a password
SETTINGS_WORDS = frozenset({"no", "yes", "true", "false", "on", "off", "none", "null"})


@dataclass(frozen=True)
class Secret:
    line: int  # 1-based, in the text scanned
    kind: str  # the detector's name for it: "AWS Access Key", "Private Key", "Secret Keyword", ...

    def __str__(self) -> str:
        return f"{self.kind} at line {self.line}"


def find_secrets(text: str) -> list[Secret]:
    """What in text looks like a credential, by line. A card's frontmatter is scanned as the YAML it
    is (so `password: hunter2` counts, unquoted), its body as markdown (where the keyword rule wants a
    quoted value, so prose that mentions a password setting does not)."""
    if not any(rule.search(text) for rule in _first_look()):
        return []  # no detector's own pattern occurs anywhere: the full scan (~8 ms a card) would find nothing
    lines = text.splitlines(keepends=True)
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if not lines or lines[0].rstrip("\r\n") != "---" or end is None:
        return _scan(text, "text.md", 0)
    return _scan("".join(lines[1:end]), "card.yaml", 1) + _scan("".join(lines[end + 1 :]), "card.md", end + 1)


def _scan(text: str, name: str, offset: int) -> list[Secret]:
    from detect_secrets.core.scan import scan_file
    from detect_secrets.settings import transient_settings

    with tempfile.TemporaryDirectory(prefix="kb-secrets-") as folder:
        path = Path(folder) / name  # the detectors choose their rules by the file's type
        path.write_text(text, encoding="utf-8")
        with transient_settings({"plugins_used": [{"name": name} for name in PLUGINS]}):
            found = {
                Secret(s.line_number + offset, s.type)
                for s in scan_file(str(path))
                if not (s.type == "Secret Keyword" and str(s.secret_value).lower() in SETTINGS_WORDS)
            }
    return sorted(found, key=lambda s: (s.line, s.kind))


@functools.cache
def _first_look() -> tuple[re.Pattern[str], ...]:
    """The detectors' own patterns, to search a whole text at once before the line-by-line scan with
    its filters: every plugin's denylist, and the keyword plugin's secret-ish names."""
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins.keyword import DENYLIST_REGEX

    rules: list[re.Pattern[str]] = [re.compile(DENYLIST_REGEX, re.IGNORECASE)]
    plugins: list[type] = list(get_mapping_from_secret_type_to_class().values())
    for plugin in plugins:
        if plugin.__name__ in PLUGINS:
            rules += getattr(plugin, "denylist", ())
    return tuple(rules)
