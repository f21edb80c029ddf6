"""A search hit's snippet as a person reads it: the card's prose around the query's words.

Never a run of its fields' values (a finding's metrics one after another) nor a JSON block: where the best
chunk holds less prose than MIN_PROSE, the snippet looks further (the card's text fields, then its lead's and
first section's prose), and a card that is a JSON block and nothing else is named by its keys. A passage in
Chinese, for a query that is not, carries a short note, "(in Chinese)", so an English reader knows what they
are looking at. The cut around the query's words is ranking's (kbtool.search.ranking.snippet)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from kbtool.model.parsing import CJK_RUN, has_cjk
from kbtool.search.chunking import field_lines, is_prose
from kbtool.search.ranking import snippet

# fewer characters of prose than this say nothing of the card: the snippet looks further (its text fields, then
# its lead and first section)
MIN_PROSE = 40
IN_CHINESE = "(in Chinese) "
# a line of a JSON block, whole or cut anywhere by chunking (a long block is split at spaces): one that starts
# with a quote or bracket, holds a member ("key": ...), or ends as a string item or an opened object does
JSON_LINE = re.compile(r'^["\[\]{}]|"\s*:|(?:"|",|[\[{]|[\]}],?)$')
JSON_KEY = re.compile(r'"([A-Za-z_][\w.]*)"\s*:')
LATIN_WORD = re.compile(r"[A-Za-z]+")


def prose(text: str, fields: set[str], title: str) -> str:
    """A chunk's text less what is not prose: code fences, JSON lines, its fields' values, the title (the hit
    shows it already) and the title line a section's chunk starts with; on one line."""
    kept = []
    for line in text.splitlines():
        plain = line.strip()
        if plain and not plain.startswith(("```", f"{title} — ")) and not JSON_LINE.search(plain):
            kept += [plain] if plain not in fields and plain != title else []
    return " ".join(" ".join(kept).split())


def readable_snippet(
    text: str,
    terms: Iterable[str],
    title: str,
    data: dict[str, Any],
    card_texts: Callable[[], list[str]],
    query: str,
) -> str:
    """The snippet of a hit whose best chunk is `text`: its prose, or when it holds too little (a JSON block,
    a finding's metrics), the card's text fields, then its lead's and first section's prose; where the card
    has no prose anywhere, the keys of its JSON block."""
    fields = field_lines(data)
    found = prose(text, fields, title)
    if len(found) < MIN_PROSE:
        texts = [v for k, v in data.items() if k != "title" and is_prose(v) and v != title]
        more = [found, " ".join(texts), *(prose(t, fields, title) for t in card_texts())]
        found = next((p for p in more if len(p) >= MIN_PROSE), found or json_keys(text))
    shown = snippet(found, list(terms))
    return IN_CHINESE + shown if is_chinese(shown) and not has_cjk(query) else shown


def json_keys(text: str) -> str:
    """What a card that is a JSON block and nothing else holds, named by its keys: a line a person can scan."""
    keys = list(dict.fromkeys(JSON_KEY.findall(text)))
    return f"a JSON block of {', '.join(keys)}" if keys else " ".join(text.split())


def is_chinese(text: str) -> bool:
    """Chinese to a reader: as many CJK characters as English words or more (a Chinese word is one or two
    characters), so a passage of Chinese with English identifiers counts and an English one quoting a term not."""
    cjk = sum(len(run) for run in CJK_RUN.findall(text))
    return cjk > 0 and cjk >= len(LATIN_WORD.findall(text))
