"""JSON and TOML that people and tools hand kb: the document, or one line saying why not.

The standard parsers refuse malformed text with their own error class, but two more inputs end in
other exceptions, which a caller catching only the parser's error turns into a crash: an integer of
more digits than Python converts (ValueError, "Exceeds the limit (4300 digits)") and nesting deeper
than the interpreter's stack (RecursionError). Here each is an Unparsable with a reason in words,
for the caller to prefix with the file or flag it read (json_input does), so whatever the text holds, a
caller gets the document or that one line.
"""

from __future__ import annotations

import json
import re
import sys
import tomllib
from typing import Any

from kbtool.model.errors import BadInput


class Unparsable(ValueError):
    """Why a text is not the document it should be, in one line without the origin."""


def why_unparsable(exc: BaseException) -> str:
    """A parser's failure in a few words: what any JSON, TOML or YAML reader may raise."""
    if isinstance(exc, RecursionError):
        return "nested too deeply to read"
    text = str(exc)
    if "integer string conversion" in text:
        return f"holds an integer of more than {sys.get_int_max_str_digits():,} digits"
    return " ".join(text.split()) or type(exc).__name__


def json_document(text: str) -> Any:
    """The JSON document text holds, or Unparsable."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise Unparsable(f"it breaks at line {exc.lineno} ({exc.msg})") from None
    except (ValueError, RecursionError) as exc:
        raise Unparsable(why_unparsable(exc)) from None


def json_input(text: str, where: str, after: str = "") -> Any:
    """The JSON document text holds, or BadInput "WHERE: not JSON (why)AFTER": what a file, a line or a flag
    handed to kb gets."""
    try:
        return json_document(text)
    except Unparsable as exc:
        raise BadInput(f"{where}: not JSON ({exc}){after}") from None


def toml_document(text: str) -> dict[str, Any]:
    """The TOML document text holds, or Unparsable."""
    try:
        return tomllib.loads(text)
    except (ValueError, RecursionError) as exc:  # TOMLDecodeError is a ValueError
        raise Unparsable(why_unparsable(exc)) from None


# a run of Chinese, Japanese or Korean characters: no spaces between words, so words are not split on them
CJK_RUN = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+")


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def nested(data: Any, *keys: str) -> Any:
    """data[k1][k2]... in parsed JSON, or None where a level is missing or not an object."""
    for key in keys:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data
