"""How much of a text is Chinese, Japanese or Korean: the measure cross-lingual search is judged by.

bench/bench_crosslingual.py calls a section Chinese-only when most of its letters are CJK, and
measures per embedding model whether English queries find such sections (bench/RESULTS.md).
"""

from __future__ import annotations

import re

from kbtool.model.parsing import CJK_RUN

# letters of alphabetic scripts (Latin, Greek, Cyrillic): the other side of the share
_ALPHABETIC = re.compile(r"[A-Za-z\u00c0-\u024f\u0370-\u03ff\u0400-\u04ff]")


def cjk_share(text: str) -> float:
    """CJK characters among CJK and alphabetic letters: 0.0 for English, near 1.0 for Chinese prose.

    Digits, punctuation, whitespace and code symbols count on neither side, so a Chinese section full
    of numbers and markup still reads as Chinese. A CJK character counts as one letter though it carries
    about a word, so a half (the threshold callers use) calls a section Chinese only when its Chinese
    clearly outweighs its English: the term names and code identifiers Chinese notes are full of stay a
    minority."""
    cjk = sum(len(run) for run in CJK_RUN.findall(text))
    alphabetic = len(_ALPHABETIC.findall(text))
    total = cjk + alphabetic
    return cjk / total if total else 0.0
