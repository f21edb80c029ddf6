"""The kb skill that ships with kbtool: how an agent works with a knowledge base.

The MCP server's prompts hand it to agents, and `kb agent install` puts it in their skill folders (as `kb skill
install kbtool:kb` does). A knowledge base with a kb skill of its own in skills/kb (a team may have adapted it)
hands on that one instead.

In an installed wheel it is package data (kbtool/kb_skill/SKILL.md, from the repository's
skills/kb through pyproject's package-dir); in a source checkout or an editable install it is
the starter knowledge base's skills/kb beside the package, the same file.
"""

from __future__ import annotations

from pathlib import Path

from kbtool.model.errors import KbError
from kbtool.skills.spec import SKILL_FILE

KB_SKILL = "kb"


def kb_skill_folder() -> Path:
    package = Path(__file__).resolve().parents[1]  # kbtool/
    for folder in (package / "kb_skill", package.parent / "skills" / KB_SKILL):
        if (folder / SKILL_FILE).is_file():
            return folder
    raise KbError("the kb skill is missing from this install of kbtool (kbtool/kb_skill/SKILL.md); reinstall kbtool")


def kb_skill_text(kb_root: Path) -> str:
    """The knowledge base's own kb skill when it has one (a team may have adapted it), else kbtool's."""
    own = kb_root / "skills" / KB_SKILL / SKILL_FILE
    if own.is_file() and not own.is_symlink():
        return own.read_text(encoding="utf-8")
    return (kb_skill_folder() / SKILL_FILE).read_text(encoding="utf-8")
