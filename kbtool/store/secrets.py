"""Credentials in what kb writes, stopped before they are committed.

Everything kb commits travels through git to every clone, so a key pasted into a card, a tag, a skill's
script, a gate's output or a commit message must be stopped before it is committed (Store.write checks every
file and the message), and reported if it already was (`kb lint`).

The rules are Yelp's detect-secrets (a maintained detector): the plugins for cloud keys, API tokens of
the common services, private keys, JWTs, credentials in URLs, and secret-named assignments (`password:
...`, `AWS_SECRET_ACCESS_KEY=...`), with its false-positive filters. Its high-entropy-string plugins are
left out: a card is full of sha256 digests and commit ids that they would flag. A few rules are our own,
for the tokens this field's documents are full of and detect-secrets has no plugin for (Hugging Face,
OpenAI project keys, Anthropic, ...): each wants a value that looks random, mixed case, as a real one does.

A documentation placeholder is not a credential: `api_key="hf_XXX"`, `sk-xxxx`, `<YOUR_TOKEN>`, `...`,
`${HF_TOKEN}`, a run of one character or words like `your-api-key-here` (is_placeholder); without that,
`kb import` of an inference engine's docs was refused for its examples.
"""

from __future__ import annotations

import bisect
import functools
import io
import itertools
import json
import re
import tempfile
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from kbtool.model.errors import BadInput

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

# (kind, pattern with the secret in group 1, the case it needs): tokens detect-secrets has no plugin for.
# A real token is random: "mixed" wants upper and lower case, "mixed+digit" a digit as well, which no
# word, sha256 digest or commit id has
OWN_RULES: tuple[tuple[str, re.Pattern[str], str], ...] = (
    ("Hugging Face Token", re.compile(r"\b(hf_[A-Za-z0-9]{30,})\b"), "mixed"),
    ("Anthropic API Key", re.compile(r"\b(sk-ant-[A-Za-z0-9_-]{32,})"), "mixed"),
    ("OpenAI API Key", re.compile(r"\b(sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})"), "mixed+digit"),
    ("GitHub Token", re.compile(r"\b(github_pat_[A-Za-z0-9_]{50,})"), "mixed"),
    ("Google API Key", re.compile(r"\b(AIza[0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"), "mixed"),
    ("Replicate API Token", re.compile(r"\b(r8_[A-Za-z0-9]{37})\b"), "mixed"),
    ("Groq API Key", re.compile(r"\b(gsk_[A-Za-z0-9]{48,})\b"), "mixed"),
    ("Bearer Token", re.compile(r"\b[Bb]earer\s+([A-Za-z0-9_\-+=]{20,})(?![\w.~/+=-])"), "mixed+digit"),
    (
        "Token Assignment",  # access_token=..., HF_TOKEN: ... (detect-secrets' keywords leave tokens out)
        re.compile(r"(?i)\b\w*token[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9_\-+=]{20,})(?![\w.~/+=-])"),
        "mixed+digit",
    ),
)

# what a secret-named setting holds when it is a switch, not a secret: the ssh option the ml-engineering
# book shows, `PasswordAuthentication=no`, is not a password  # pragma: allowlist secret
SETTINGS_WORDS = frozenset({"no", "yes", "true", "false", "on", "off", "none", "null"})

# the words documentation writes where a credential goes: `your-api-key-here`, `<YOUR_TOKEN>`, `changeme`
PLACEHOLDER_WORDS = frozenset(
    "your yours my our the a an this that it to of for in on at is be with and or here there goes go put set "
    "insert enter paste replace change changeme me use new real actual strong long random generated generate "
    "some something string value values own placeholder redacted dummy fake example sample test testing demo "
    "foo bar baz api key keys token tokens secret secrets password passwd pass pwd access auth bearer id client "
    "credential credentials user username name hf sk org personal read write xxx xxxx todo fixme none empty "
    "dev local default please".split()
)
TEMPLATE = re.compile(r"\$\{.*\}|\{\{.*\}\}|^<.*>$|^\{.*\}$|^\$\(.*\)$|^\$\w+$|^%\w+%$|^\[.*\]$")
SERVICE_PREFIX = re.compile(r"^(?:[A-Za-z]{1,10}[_-])+")  # hf_, sk-proj-, ghp_, xoxb-: not the secret part
MASK = frozenset("xX*#•0-_. ")
PRINTABLE_RUN = re.compile(rb"[\x20-\x7e]{8,}")  # what strings(1) shows of a binary file
# and what `strings -e l / b / L / B` shows: text of 2 or 4 bytes a character (UTF-16 and UTF-32, either byte order),
# each with the encoding that reads it; a key saved by a Windows editor or PowerShell's `>` is UTF-16
WIDE_RUNS = (
    (re.compile(rb"(?:[\x20-\x7e]\x00\x00\x00){8,}"), "utf-32-le"),
    (re.compile(rb"(?:\x00\x00\x00[\x20-\x7e]){8,}"), "utf-32-be"),
    (re.compile(rb"(?:[\x20-\x7e]\x00){8,}"), "utf-16-le"),
    (re.compile(rb"(?:\x00[\x20-\x7e]){8,}"), "utf-16-be"),
)
BOMS = (  # the byte-order marks of wide text, longest first (UTF-32 LE's opens as UTF-16 LE's does)
    (b"\xff\xfe\x00\x00", "utf-32"),
    (b"\x00\x00\xfe\xff", "utf-32"),
    (b"\xff\xfe", "utf-16"),
    (b"\xfe\xff", "utf-16"),
)
ASSIGNMENT = re.compile(r"^\s*(?:export\s+)?[A-Za-z_][\w.-]*\s*[:=]")  # NAME=value, name: value
WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

REDACTED = "[redacted by kb]"
PRIVATE_KEY_BLOCK = re.compile(
    r"-----BEGIN[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----.*?(?:-----END[ A-Z0-9]*PRIVATE KEY[ A-Z]*-----|\Z)", re.DOTALL
)


@dataclass(frozen=True)
class Secret:
    line: int  # 1-based, in the text scanned
    kind: str  # the detector's name for it: "AWS Access Key", "Private Key", "Secret Keyword", ...
    value: str = field(default="", repr=False, compare=False)  # never shown; compared with what was there before

    def __str__(self) -> str:
        return f"{self.kind} at line {self.line}" if self.line else f"{self.kind} in binary content"


def find_secrets(text: str, name: str = "text.md") -> list[Secret]:
    """What in text looks like a credential, by line; name's suffix says what the text is, as detect-secrets
    picks its rules by it (`.toml`: `password = x` counts unquoted). A markdown file's frontmatter (a card,
    a SKILL.md) is scanned as the YAML it is (so `password: hunter2` counts, unquoted), and line by line
    as well, since detect-secrets reads only a YAML mapping's values and a tag list holds none; its body as
    markdown (where the keyword rule wants a quoted value, so prose that mentions a password setting does not)."""
    lines = _lines(text)
    hit = _lines_hit(lines)
    if not hit:
        return []  # no detector's own pattern occurs anywhere: the line-by-line scan would find nothing
    with _detectors():
        return _find(text, name, lines, hit)


def _find(text: str, name: str, lines: list[str], hit: set[int]) -> list[Secret]:
    name = scan_name(name)
    suffix = PurePosixPath(name).suffix
    end = next((i for i in range(1, len(lines)) if lines[i].rstrip("\r\n") == "---"), None)
    if suffix in (".yaml", ".yml"):
        found = _yaml_values(text, 0) + _scan(lines, hit, name)
    elif suffix != ".md" or not lines or lines[0].rstrip("\r\n") != "---" or end is None:
        found = _scan(lines, hit, name)
        if _is_plain_text(name):
            found += _assignments(lines, hit)
        if suffix == ".jsonl":
            found += _in_json_strings(lines, hit)
    else:
        frontmatter, body = set(range(1, end)), set(range(end + 1, len(lines)))
        found = _yaml_values("".join(lines[1:end]), 1) + _scan(lines, hit & frontmatter, "card.yaml")
        found += _scan(lines, hit & body, "card.md") + _assignments(lines, hit & body)
    found += _own_rules(lines, hit)
    unique = {(s.line, s.kind): s for s in found if not is_placeholder(s.value)}
    return sorted(unique.values(), key=lambda s: (s.line, s.kind))


def is_placeholder(value: str) -> bool:
    """Whether a value in a credential's place is documentation's stand-in for one: templated (`<TOKEN>`,
    `${HF_TOKEN}`, `{{ secrets.X }}`), elided (`sk-...`), masked (`hf_XXX`, `AKIAXXXXXXXXXXXXXXXX`, `****`),
    or only placeholder words (`your-api-key-here`, `YOUR_SECRET`). A real-looking value never is."""
    value = value.strip().strip("\"'`\\").strip()
    if not value or "..." in value or "…" in value or TEMPLATE.search(value):
        return True
    rest = SERVICE_PREFIX.sub("", value) or value
    if set(rest) <= MASK or (len(rest) >= 3 and _longest_run(rest) * 2 >= len(rest)):
        return True
    words = WORD.findall(value)
    return bool(words) and all(word.lower() in PLACEHOLDER_WORDS for word in words)


def secrets_in_file(rel: str, content: str | bytes) -> list[Secret]:
    """find_secrets over a file kb writes, by its type; UTF-16 or UTF-32 text with its byte-order mark as the
    text it is; any other binary one (not UTF-8, or holding NUL: a skill's asset, wide text without a mark) by
    the printable runs in it, one byte or several a character, as strings(1) shows them, each at line 0."""
    text = _as_text(content)
    if text is not None:
        return find_secrets(text, rel)
    data = content if isinstance(content, bytes) else b""
    wide = _wide_text(data)
    if wide is not None:
        return find_secrets(wide, rel)
    runs = [run.decode("ascii") for run in PRINTABLE_RUN.findall(data)]
    runs += [run.decode(encoding) for pattern, encoding in WIDE_RUNS for run in pattern.findall(data)]
    return [Secret(0, s.kind, s.value) for s in find_secrets("\n".join(runs), "binary.txt")]


def _wide_text(data: bytes) -> str | None:
    """The text of UTF-16 or UTF-32 bytes that open with their byte-order mark; None for other bytes."""
    encoding = next((name for bom, name in BOMS if data.startswith(bom)), None)
    if encoding is None:
        return None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError:
        return None


def secrets_in_names(rels: list[str]) -> dict[str, list[Secret]]:
    """The paths whose very name looks like a credential (a key saved as a file's name: `AKIA....txt`), each
    with what was found; the names are scanned as lines of plain text, all at once."""
    names = [re.sub(r"[\r\n]", " ", rel) for rel in rels]
    found: dict[str, list[Secret]] = {}
    for secret in find_secrets("\n".join(names) + "\n", "names.txt"):
        if 0 < secret.line <= len(rels):
            found.setdefault(rels[secret.line - 1], []).append(secret)
    return found


def added_secrets(rel: str, new: str | bytes, old: bytes | None) -> list[Secret]:
    """The credentials a write of new over old (None: a new file) would add. One that was already there
    (committed by a person with --allow-secret, or before kb checked) is lint's to report, not a reason to
    refuse every later edit of the file. An append (a run log) is scanned for the lines it adds alone."""
    new_text, old_text = _as_text(new), (None if old is None else _as_text(old))
    if (
        new_text is not None
        and old_text is not None
        and old_text.endswith("\n")
        and new_text.startswith(old_text)
        and PurePosixPath(rel).suffix not in (".md", ".yaml", ".yml")  # read whole: a line's meaning is its file's
    ):
        offset = len(_lines(old_text))
        return [Secret(s.line + offset, s.kind, s.value) for s in secrets_in_file(rel, new_text[len(old_text) :])]
    found = secrets_in_file(rel, new)
    if not found or old is None:
        return found
    there = {(s.kind, s.value) for s in secrets_in_file(rel, old)}
    return [s for s in found if (s.kind, s.value) not in there]


def check_write(
    files: Mapping[str, str | bytes | None],
    before: Mapping[str, bytes | None],
    message: str,
    override: str | None = None,
) -> None:
    """BadInput, in one line, when a write would commit a credential in a file, a file's name (one new here)
    or its commit message. override: how the caller's surface lets a person write one anyway ("pass
    --allow-secret"), said in the refusal; None where there is no way (MCP, a command without the option):
    the refusal offers none."""
    for rel, content in files.items():
        if content is not None and (found := added_secrets(rel, content, before.get(rel))):
            raise BadInput(_refusal(rel, found, override))
    named = secrets_in_names([rel for rel, content in files.items() if content is not None and before.get(rel) is None])
    if named:
        raise BadInput(_refusal(*next(iter(named.items())), override, by_name=True))
    if found := find_secrets(message, "message.txt"):
        raise BadInput(_refusal("the commit message", found, override))


def _refusal(where: str, found: list[Secret], override: str | None, by_name: bool = False) -> str:
    where = where if where.isprintable() else repr(where)  # a file name holding a newline stays one line
    said = [s.kind for s in found] if by_name else list(map(str, found))
    shown = "; ".join(said[:3]) + (f"; and {len(said) - 3} more" if len(said) > 3 else "")
    what = "its name looks like a credential" if by_name else "looks like a credential"
    return (
        f"{where}: {what} ({shown}); what kb writes is committed and travels to every clone, "
        "so nothing was written. Remove it" + (f", or {override} if it is not one" if override else "")
    )


def redact(text: str) -> str:
    """text with every credential replaced by REDACTED: a private key's whole block, another secret's
    value (the rest of its line stays, to read), or its whole line when the value is not found on it."""
    text = PRIVATE_KEY_BLOCK.sub(REDACTED, text)
    for _ in range(3):
        found = find_secrets(text, "output.txt")
        if not found:
            return text
        lines = _lines(text)
        for secret in found:
            line = lines[secret.line - 1] if 0 < secret.line <= len(lines) else ""
            if secret.value and secret.value in line:
                lines[secret.line - 1] = line.replace(secret.value, REDACTED)
            elif line:
                lines[secret.line - 1] = REDACTED + line[len(line.rstrip("\r\n")) :]
        text = "".join(lines)
    return REDACTED if find_secrets(text, "output.txt") else text


def redact_record(record: dict[str, Any]) -> dict[str, Any]:
    """A run's record (a line of runs/*.jsonl) with its texts redacted: each string first, then any string
    that still looks like a credential as the JSON line holds it (escaped), whole; the record is kept."""
    redacted: dict[str, Any] = _map_strings(record, redact)
    if find_secrets(json.dumps(redacted, ensure_ascii=False), "run.jsonl"):
        redacted = _map_strings(
            redacted, lambda s: REDACTED if find_secrets(json.dumps(s, ensure_ascii=False), "run.jsonl") else s
        )
    if find_secrets(json.dumps(redacted, ensure_ascii=False), "run.jsonl"):  # only two strings side by side say it
        redacted = _map_strings(redacted, lambda s: REDACTED)
    return redacted


def _map_strings(value: Any, change: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return change(value)
    if isinstance(value, dict):
        return {key: _map_strings(item, change) for key, item in value.items()}
    if isinstance(value, list):
        return [_map_strings(item, change) for item in value]
    return value


def _scan(lines: list[str], chosen: set[int], name: str) -> list[Secret]:
    """Every plugin over the chosen lines (indexes into lines; those a detector's pattern occurs in, as the
    plugins cost ~0.1 ms a line and a README has 1,000), each as it is. Not detect-secrets' scan_file: that
    first reads any text as an INI file and, when it parses as one, scans what the parser made of it and
    never the lines themselves (`hello` above `AWS_SECRET_ACCESS_KEY=...` hid the key)."""
    from detect_secrets.core.scan import _process_line_based_plugins

    if not chosen:
        return []
    order = sorted(chosen)
    with _detectors():
        found = [
            (order[s.line_number - 1] + 1, s.type, str(s.secret_value or ""))
            for s in _process_line_based_plugins(list(enumerate((lines[i] for i in order), start=1)), filename=name)
        ]
    return _found(found, lines, 0)


def _assignments(lines: list[str], hit: set[int]) -> list[Secret]:
    """In plain text (a script, an .env file, a command's output, a commit message, a markdown code block),
    the lines that begin by assigning a value, by a config file's rules: `export AWS_SECRET_ACCESS_KEY=...`
    and `password: ...` count unquoted there, where elsewhere in markdown the keyword rule wants quotes. A
    value with a space in it is prose (`secret_sauce = fast decoding`)."""
    assigning = {i for i in hit if ASSIGNMENT.match(lines[i])}
    return [s for s in _scan(lines, assigning, "file.cfg") if s.value and not any(c.isspace() for c in s.value)]


def _in_json_strings(lines: list[str], hit: set[int]) -> list[Secret]:
    """In JSON Lines (a run log), each line's strings as the text they hold: a command's output, escaped
    onto one line, keeps its `KEY=value` lines only once decoded."""
    found = []
    for i in sorted(hit):
        try:
            value = json.loads(lines[i])
        except ValueError:
            continue
        for text in _strings(value):
            found += [Secret(i + 1, s.kind, s.value) for s in find_secrets(text, "output.txt")]
    return found


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [text for item in value.values() for text in _strings(item)]
    if isinstance(value, list):
        return [text for item in value for text in _strings(item)]
    return []


def _is_plain_text(name: str) -> bool:
    """Text detect-secrets has no language for (not code, not a config format)."""
    from detect_secrets.util.filetype import FileType, determine_file_type

    return determine_file_type(name) == FileType.OTHER


def _yaml_values(text: str, offset: int) -> list[Secret]:
    """detect-secrets' reading of YAML: a key's value wherever it is written (a block scalar under its key,
    a quoted string over lines), judged by the key's name, so `password: hunter2` counts unquoted."""
    from detect_secrets.core.scan import scan_file

    with tempfile.TemporaryDirectory(prefix="kb-secrets-") as folder:
        path = Path(folder) / "file.yaml"  # the detectors choose their rules by the file's type
        path.write_text(text, encoding="utf-8")
        with _detectors():
            found = [(s.line_number, s.type, str(s.secret_value or "")) for s in scan_file(str(path))]
    return _found(found, _lines(text), offset)


def _found(found: list[tuple[int, str, str]], lines: list[str], offset: int) -> list[Secret]:
    """Secrets from (line number in lines, kind, value) triples, each value whole, a switch word left out."""
    return [
        Secret(number + offset, kind, _whole_value(kind, value, lines[number - 1] if number <= len(lines) else ""))
        for number, kind, value in found
        if not (kind == "Secret Keyword" and value.strip("`'\"").lower() in SETTINGS_WORDS)
    ]


def _whole_value(kind: str, value: str, line: str) -> str:
    """The credential a detector found, whole: some plugins' patterns capture a part of it (the GitHub one
    its `ghp` prefix), which would be judged a placeholder or redacted alone. Whole is its pattern's match
    when value begins it or is too short to be the secret (a URL's password stays the part it is)."""
    for pattern in getattr(_plugins_by_kind().get(kind), "denylist", ()):
        for match in pattern.finditer(line):
            whole: str = match.group(0).strip(" \t=:\"'")
            if value and value in whole and (whole.startswith(value) or len(value) < 8):
                return whole
    return value


_DETECTORS_HELD = threading.RLock()  # detect-secrets' settings are one global: one scan at a time
_held_for_scan = 0


@contextmanager
def _detectors() -> Iterator[None]:
    """detect-secrets set to PLUGINS for the scan in hand, once however deep the scan nests (a run log's
    lines each scanned as text); setting them costs ~0.5 ms."""
    global _held_for_scan
    from detect_secrets.settings import transient_settings

    with _DETECTORS_HELD:
        if _held_for_scan:
            yield
            return
        with transient_settings({"plugins_used": [{"name": plugin} for plugin in PLUGINS]}):
            _held_for_scan += 1
            try:
                yield
            finally:
                _held_for_scan -= 1


@functools.cache
def _plugins_by_kind() -> dict[str, type]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class

    return dict(get_mapping_from_secret_type_to_class())


def _own_rules(lines: list[str], hit: set[int]) -> list[Secret]:
    found = []
    for i in sorted(hit):
        if "pragma: allowlist secret" in lines[i]:  # detect-secrets' own mark of a line that holds none
            continue
        for kind, pattern, needs in OWN_RULES:
            for match in pattern.finditer(lines[i]):
                value = match.group(1)
                random = any(c.isupper() for c in value) and any(c.islower() for c in value)
                if random and (needs == "mixed" or any(c.isdigit() for c in value)):
                    found.append(Secret(i + 1, kind, value))
    return found


@functools.cache
def _first_look() -> tuple[re.Pattern[str], ...]:
    """The detectors' own patterns, to search a whole text at once before the line-by-line scan with
    its filters: every plugin's denylist, the keyword plugin's secret-ish names, and our own rules."""
    from detect_secrets.plugins.keyword import DENYLIST_REGEX

    rules: list[re.Pattern[str]] = [re.compile(DENYLIST_REGEX, re.IGNORECASE)]
    for plugin in _plugins_by_kind().values():
        if plugin.__name__ in PLUGINS:
            rules += getattr(plugin, "denylist", ())
    return (*rules, *(pattern for _, pattern, _ in OWN_RULES))


def _lines_hit(lines: list[str]) -> set[int]:
    """The indexes of the lines a match of some detector's pattern touches: each pattern run once over the
    whole text, as a loop of every pattern over every line costs ~1 s in a 200 KB file."""
    text = "".join(lines)
    starts = list(itertools.accumulate(len(line) for line in lines))  # where each line ends
    hit: set[int] = set()
    for rule in _first_look():
        for match in rule.finditer(text):
            first = bisect.bisect_right(starts, match.start())
            last = bisect.bisect_right(starts, max(match.end() - 1, match.start()))
            hit.update(range(first, min(last, len(lines) - 1) + 1))
    return hit


def _lines(text: str) -> list[str]:
    """text's lines as detect-secrets counts them (\\n, \\r\\n or \\r ends one; str.splitlines also splits at
    form feeds and the like, which would shift every line number after one)."""
    return io.StringIO(text, newline="").readlines()


def _longest_run(text: str) -> int:
    longest = run = 0
    for i, char in enumerate(text):
        run = run + 1 if i and char == text[i - 1] else 1
        longest = max(longest, run)
    return longest


def _as_text(content: str | bytes) -> str | None:
    if isinstance(content, str):
        return content
    if b"\0" in content:
        return None
    try:
        return content.decode("utf-8")
    except UnicodeDecodeError:
        return None


def scan_name(rel: str) -> str:
    """A name for the scanned copy with rel's type and nothing else of it (a hostile file name stays out)."""
    suffix = PurePosixPath(rel).suffix.lower()
    return f"file{suffix}" if re.fullmatch(r"\.[a-z0-9]{1,12}", suffix) else "file.txt"
