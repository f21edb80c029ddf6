"""`kb skill scan`: what in a skill could turn the agent that loads it against its user.

A skill is instructions an agent follows with the user's permissions, so the scan looks for what a person reviewing
it would miss or wave through:

- text a person does not see but the agent reads: HTML comments in SKILL.md (outside code),
  zero-width, bidirectional-control and Unicode tag characters anywhere;
- a download piped into a shell or an interpreter (`curl ... | sh`, `bash <(curl ...)`, `iwr | iex`);
- files or the environment sent to a URL: credentials files, a whole environment (`env`,
  `os.environ`, `process.env`), a secret-named variable inside a URL;
- symbolic links (any: a skill is plain files; one leaving the folder is worse);
- executables and scripts that SKILL.md never mentions;
- allowed-tools wider than the body uses (a shell it never runs, programs it never names).

Each finding has a severity: high (refused by install, import and pack unless trusted), medium
(`kb skill scan` fails on it by default), low (a hint).
"""

from __future__ import annotations

import os
import re
import unicodedata
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from kbtool.model import markdown
from kbtool.skills.lock import IGNORED
from kbtool.skills.spec import SKILL_FILE

SEVERITIES = ("low", "medium", "high")
SCRIPT_SUFFIXES = {".sh", ".bash", ".zsh", ".py", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1", ".bat", ".cmd"}
BINARY_MAGIC = (b"\x7fELF", b"MZ", b"\xfe\xed\xfa\xce", b"\xfe\xed\xfa\xcf", b"\xcf\xfa\xed\xfe", b"\xca\xfe\xba\xbe")
MAX_TEXT_BYTES = 2 << 20  # a text file past this is not read for patterns (the size limit is the registry's)

# characters that change what a person sees without showing themselves
BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
ZERO_WIDTH = set("\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\u180e\ufeff")
DIRECTION_MARKS = set("\u200e\u200f\u061c")

SHELLS = r"(?:sudo\s+(?:-\S+\s+)*)?(?:ba|z|da|k|fi)?sh|python[0-9.]*|perl|ruby|node|source\s+/dev/stdin"
FETCH = r"(?:curl|wget|fetch|iwr|Invoke-WebRequest|irm|Invoke-RestMethod)\b"
PIPE_TO_SHELL = [
    re.compile(rf"{FETCH}[^|\n]*\|\s*(?:{SHELLS})\b(?!\s*-c\s+['\"])", re.I),
    re.compile(rf"(?:{SHELLS})\s+(?:-c\s+)?[\"']?\s*(?:<\(|\$\()\s*{FETCH}", re.I),
    re.compile(rf"\b(?:eval|source)\s+[\"']?(?:\$\(|<\()\s*{FETCH}", re.I),
    re.compile(r"\b(?:iwr|irm|Invoke-WebRequest|Invoke-RestMethod)\b[^|\n]*\|\s*(?:iex|Invoke-Expression)\b", re.I),
]
SENSITIVE_PATH = (
    r"(?:~|\$HOME|\$\{HOME\}|/root|/home/[^/\s]+)/\.(?:ssh|aws|gnupg|kube|docker|netrc|git-credentials|config/gcloud|"
    r"npmrc|pypirc|bash_history|zsh_history)\S*|/etc/(?:passwd|shadow)\b|\bid_(?:rsa|ed25519|ecdsa)\b|"
    r"(?:^|[\s'\"=@<])\.env\b"
)
NETWORK = (
    r"(?:curl|wget|nc|ncat|netcat|scp|rsync|ftp|sftp|requests\.(?:post|put)|httpx\.(?:post|put)|fetch|axios\.post)\b"
)
EXFILTRATION = [
    (re.compile(rf"{NETWORK}.*(?:{SENSITIVE_PATH})", re.I), "sends a credentials file to the network"),
    (re.compile(rf"(?:{SENSITIVE_PATH}).*\|\s*{NETWORK}", re.I), "pipes a credentials file to the network"),
    (re.compile(rf"{NETWORK}.*<\s*(?:{SENSITIVE_PATH})", re.I), "sends a credentials file to the network"),
    (
        re.compile(rf"\b(?:env|printenv|set)\b\s*(?:\|\s*(?:base64\s*\|\s*)?{NETWORK})", re.I),
        "pipes the whole environment to the network",
    ),
    (
        re.compile(rf"{NETWORK}.*\$\(\s*(?:env|printenv)\s*\)", re.I),
        "sends the whole environment to the network",
    ),
    (
        re.compile(
            r"(?:post|put|request|fetch|send)\w*\(.*(?:os\.environ\b(?!\s*[\[.]get|\s*\[)|process\.env\b(?!\.))", re.I
        ),
        "sends the whole environment to the network",
    ),
    (
        re.compile(
            r"https?://[^\s'\"`]*[?&/=][^\s'\"`]*\$\{?\w*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)\w*", re.I
        ),
        "puts a secret variable into a URL",
    ),
    (
        re.compile(
            r"\b(?:send|post|upload|transmit|exfiltrate|forward|copy)\b[^.\n]{0,80}\b(?:environment variables|"
            r"\.env\b|credentials|secrets|api keys|private keys?|ssh keys?|tokens)\b[^.\n]{0,80}\bhttps?://",
            re.I,
        ),
        "tells the agent to send secrets to a URL",
    ),
]
SUSPICIOUS_COMMENT = re.compile(
    r"https?://|\b(?:curl|wget|bash|sh -c|eval|rm -rf|chmod|base64)\b|\bignore\b.*\b(?:instructions|above|previous)\b|"
    r"\bdo not (?:tell|mention|show|reveal)\b|\b(?:secret|secrets|password|token|api key)\b",
    re.I,
)
FENCE = re.compile(r"^\s{0,3}(```|~~~)")
# cheap gates before the per-character and per-pattern work, which only lines holding one of these need
HIDDEN = re.compile("[" + "".join(sorted(BIDI_CONTROLS | ZERO_WIDTH | DIRECTION_MARKS)) + "\U000e0000-\U000e007f]")
RISKY_WORDS = re.compile(
    r"curl|wget|fetch|iwr|irm|invoke-|\bnc\b|ncat|netcat|scp|rsync|ftp|requests\.|httpx\.|axios|https?://|"
    r"\benv\b|printenv|environ|process\.env|\beval\b|\bsource\b",
    re.I,
)
HTML_COMMENT = re.compile(r"<!--(.*?)-->", re.S)


@dataclass(frozen=True)
class ScanFinding:
    severity: str  # low, medium, high
    rule: str
    path: str  # inside the skill folder
    line: int | None
    message: str

    def text(self) -> str:
        where = f"{self.path}:{self.line}" if self.line else self.path
        return f"{self.severity:<6} {self.rule}: {where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def at_least(findings: list[ScanFinding], threshold: str) -> list[ScanFinding]:
    floor = SEVERITIES.index(threshold)
    return [f for f in findings if SEVERITIES.index(f.severity) >= floor]


def scan_skill(folder: Path) -> list[ScanFinding]:
    """Every finding in the skill folder, most severe first."""
    findings: list[ScanFinding] = []
    skill_text = _text(folder / SKILL_FILE) or ""
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if any(part in IGNORED for part in path.relative_to(folder).parts):
            continue
        if path.is_symlink():
            findings.append(_symlink(folder, path, rel))
            continue
        if not path.is_file():
            continue
        findings += _executable(path, rel, skill_text)
        text = _text(path)
        if text is None:
            continue
        findings += _invisible(text, rel)
        findings += _pipes_and_exfiltration(text, rel)
        if rel == SKILL_FILE:
            findings += _hidden_comments(text, rel)
            findings += _allowed_tools(text, rel)
    return sorted(findings, key=lambda f: (-SEVERITIES.index(f.severity), f.path, f.line or 0))


def scan_files(files: dict[str, bytes]) -> list[ScanFinding]:
    """scan_skill over files not yet on disk (a pack about to be written), by path inside the folder."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="kb-scan-") as scratch:
        root = Path(scratch) / "skill"
        for rel, content in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(content)
        return scan_skill(root)


def refusal(name: str, findings: list[ScanFinding], trust_hint: str) -> str | None:
    """Why a skill is refused for its high-severity findings (the first named), or None."""
    high = at_least(findings, "high")
    if not high:
        return None
    more = f" (and {len(high) - 1} more)" if len(high) > 1 else ""
    return f"{name}: the security scan found {high[0].text()}{more}; {trust_hint}"


def _text(path: Path) -> str | None:
    try:
        if path.stat().st_size > MAX_TEXT_BYTES:
            return None
        data = path.read_bytes()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None
    return data.decode("utf-8", errors="replace")


def _symlink(folder: Path, path: Path, rel: str) -> ScanFinding:
    target = os.readlink(path)
    resolved = (path.parent / target).resolve()
    inside = resolved == folder.resolve() or folder.resolve() in resolved.parents
    if inside:
        return ScanFinding("medium", "symlink", rel, None, f"a symbolic link (to {target}); a skill is plain files")
    return ScanFinding("high", "symlink-out", rel, None, f"a symbolic link leaving the skill folder (to {target})")


def _executable(path: Path, rel: str, skill_text: str) -> list[ScanFinding]:
    head = path.read_bytes()[:4] if path.stat().st_size else b""
    binary = head.startswith(BINARY_MAGIC)
    runnable = binary or os.access(path, os.X_OK) or path.suffix.lower() in SCRIPT_SUFFIXES or head.startswith(b"#!")
    if not runnable or rel == SKILL_FILE or rel in skill_text or path.name in skill_text:
        return []
    what = "a binary executable" if binary else "a script" if not os.access(path, os.X_OK) else "an executable"
    return [ScanFinding("medium", "unmentioned-executable", rel, None, f"{what} that {SKILL_FILE} never mentions")]


def _invisible(text: str, rel: str) -> list[ScanFinding]:
    out: list[ScanFinding] = []
    if not HIDDEN.search(text):
        return out
    for number, line in enumerate(text.splitlines(), 1):
        if not HIDDEN.search(line):
            continue
        for index, char in enumerate(line):
            if number == 1 and index == 0 and char == "\ufeff":
                continue  # a byte-order mark opening the file
            if char == "\u200d" and _joins_emoji(line, index):
                continue  # an emoji sequence (👩‍💻) is joined by U+200D on purpose
            code = ord(char)
            if char in BIDI_CONTROLS:
                severity, kind = "high", "a bidirectional control"
            elif 0xE0000 <= code <= 0xE007F:
                severity, kind = "high", "a Unicode tag character (invisible text)"
            elif char in ZERO_WIDTH:
                severity, kind = "high", "a zero-width character"
            elif char in DIRECTION_MARKS:
                severity, kind = "medium", "a direction mark"
            else:
                continue
            name = unicodedata.name(char, f"U+{code:04X}")
            out.append(ScanFinding(severity, "invisible-character", rel, number, f"{kind}: U+{code:04X} {name}"))
            break  # one per line is enough to look
    return out


def _joins_emoji(line: str, index: int) -> bool:
    def pictographic(char: str) -> bool:
        return (
            ord(char) >= 0x1F000 or unicodedata.category(char) == "So" or char in "\u2640\u2642\u2695\u2696\u2708\u2764"
        )

    before = line[index - 1] if index else ""
    if before in ("\ufe0f",) or 0x1F3FB <= ord(before or " ") <= 0x1F3FF:  # a variation selector or skin tone
        before = line[index - 2] if index > 1 else ""
    after = line[index + 1] if index + 1 < len(line) else ""
    return bool(before and after and pictographic(before) and pictographic(after))


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """Lines with shell continuations (a trailing backslash) joined, each with its first line's number."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, line in enumerate(text.splitlines(), 1):
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        out.append((start, pending + line))
        pending = ""
    if pending:
        out.append((start, pending))
    return out


def _pipes_and_exfiltration(text: str, rel: str) -> list[ScanFinding]:
    out: list[ScanFinding] = []
    if not RISKY_WORDS.search(text):
        return out
    for number, line in _logical_lines(text):
        if not RISKY_WORDS.search(line):
            continue
        if any(p.search(line) for p in PIPE_TO_SHELL):
            message = "pipes a download into a shell or interpreter: whatever the server sends then runs"
            out.append(ScanFinding("high", "pipe-to-shell", rel, number, message))
        for pattern, message in EXFILTRATION:
            if pattern.search(line):
                out.append(ScanFinding("high", "exfiltration", rel, number, message))
                break
    return out


def _outside_code(text: str) -> str:
    """text with fenced code blocks and inline code blanked (line breaks kept): what a reader sees as prose."""
    out, fence = [], None
    for line in text.split("\n"):
        opened = FENCE.match(line)
        if fence is None and opened:
            fence = opened.group(1)
            out.append("")
        elif fence is not None:
            out.append("")
            if line.strip().startswith(fence):
                fence = None
        else:
            out.append(re.sub(r"`[^`\n]*`", lambda m: " " * len(m.group(0)), line))
    return "\n".join(out)


def _hidden_comments(text: str, rel: str) -> list[ScanFinding]:
    prose = _outside_code(text)
    out = []
    for found in HTML_COMMENT.finditer(prose):
        body = text[found.start(1) : found.end(1)]
        number = prose.count("\n", 0, found.start()) + 1
        gist = " ".join(body.split())[:80]
        if SUSPICIOUS_COMMENT.search(body):
            message = f"an HTML comment (hidden when rendered) with a URL, a command or a secret: {gist!r}"
            out.append(ScanFinding("high", "hidden-comment", rel, number, message))
        else:
            message = f"an HTML comment, hidden when rendered but read by the agent: {gist!r}"
            out.append(ScanFinding("medium", "hidden-comment", rel, number, message))
    return out


def _allowed_tools(text: str, rel: str) -> list[ScanFinding]:
    try:
        data, body = markdown.read_frontmatter(text.removeprefix("\ufeff"), allow_empty=False)
    except markdown.FrontmatterError:
        return []
    granted = data.get("allowed-tools") if isinstance(data, dict) else None
    if not isinstance(granted, str) or not granted.strip():
        return []
    commands = _shell_programs(body)
    out = []
    for tool in re.findall(r"[A-Za-z_][\w-]*(?:\([^)]*\))?", granted):
        name, _, scope = tool.partition("(")
        scope = scope.rstrip(")")
        if name == "Bash":
            program = scope.split(":", 1)[0].split()[0] if scope.strip(" *") else ""
            if not program and not commands:
                out.append(
                    ScanFinding(
                        "medium", "wide-allowed-tools", rel, None, "grants any shell command; the body runs none"
                    )
                )
            elif not program:
                narrower = " ".join(f"Bash({p}:*)" for p in sorted(commands)[:6])
                message = f"grants any shell command; the body runs only {', '.join(sorted(commands))}: {narrower}"
                out.append(ScanFinding("low", "wide-allowed-tools", rel, None, message))
            elif program not in commands and program not in body:
                message = f"grants {tool}; the body never runs {program}"
                out.append(ScanFinding("medium", "wide-allowed-tools", rel, None, message))
        elif not re.search(rf"\b{re.escape(name)}\b", body, re.I):
            out.append(ScanFinding("low", "wide-allowed-tools", rel, None, f"grants {name}; the body never names it"))
    return out


def _shell_programs(body: str) -> set[str]:
    """The programs the body's shell blocks run (each command's first word)."""
    programs: set[str] = set()
    fence = None
    for line in body.split("\n"):
        opened = FENCE.match(line)
        if fence is None and opened:
            language = line.strip().lstrip("`~").strip().lower()
            fence = (
                opened.group(1) if language in ("sh", "bash", "shell", "console", "zsh") else f"skip{opened.group(1)}"
            )
            continue
        if fence is not None and line.strip().startswith(fence.removeprefix("skip")):
            fence = None
            continue
        if fence is None or fence.startswith("skip"):
            continue
        command = line.strip().removeprefix("$ ").strip()
        if command and not command.startswith("#"):
            for part in re.split(r"&&|\|\||\||;", command):
                words = part.split()
                while words and ("=" in words[0] or words[0] in ("sudo", "env", "time", "exec")):
                    words = words[1:]
                if words:
                    programs.add(Path(words[0]).name)
    return programs
