"""Tokens as an LLM's BPE counts them, estimated without a tokenizer: what the answers' budgets are spent in.

Characters / 4 holds for English prose only: what kb answers with is dense with numbers, hashes, ids and JSON
punctuation, which BPE tokenizers cut finer (a 40-hex commit sha is ~25 tokens of o200k_base, not 10; a
full-precision float ~7). So a text is cut as those tokenizers pre-split it (words, digits in threes, runs of
CJK characters, punctuation runs, runs of spaces) and each piece counted, a tenth added to err high: over the
starter KB's cards (English, Chinese, JSON blueprints), the docs and real benchmark exports this counts ~15% over
GPT-4o's o200k_base and never under it (tests/process/test_budget.py holds the estimate to the real count).
"""

from __future__ import annotations

import json
import re
from typing import Any

# words (a capitalised part of a CamelCase name its own), up to three digits, a space before digits (BPE keeps
# it apart), a run of spaces, a run of other scripts' characters, a run of punctuation
_PIECE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d{1,3}|\s{2,}| (?=\d)|[^\x00-\x7f]+|[^\sA-Za-z\d\x80-\U0010ffff]+")
LETTERS_A_TOKEN = 9  # a long word or identifier is cut into pieces about this long; shorter words are one


def estimate_tokens(text: str) -> int:
    """TEXT's tokens, estimated on the high side (see the module's docstring)."""
    n = 0
    for match in _PIECE.finditer(text):
        piece = match.group(0)
        if piece.isascii() and piece[0].isalpha():
            n += 1 + len(piece) // LETTERS_A_TOKEN
        elif not piece.isascii():
            n += (len(piece) * 4 + 4) // 5  # the starter KB's Chinese runs 1.28 characters a token
        elif not piece[0].isdigit() and not piece.isspace():
            n += (len(piece) + 1) // 2  # punctuation merges in pairs at best: '":', '},', '("'
        else:
            n += 1  # up to three digits, a run of spaces
    return n * 11 // 10 + 1


def json_tokens(value: Any) -> int:
    """VALUE's tokens as the MCP wire carries it: compact JSON, other scripts as UTF-8 (not escapes)."""
    return estimate_tokens(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
