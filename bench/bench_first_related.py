"""The first `related` after `kb serve` starts, on the starter knowledge base with the real model.

    .venv/bin/python bench/bench_first_related.py [--starts 3]

A fresh clone of this repository: the server's first start has no index and no vectors; the first call is
`related` on a card: how long it takes, and whether its answer holds the similar cards or a note that the
model is still loading; then how long until it holds them (the vectors built). Then the server is started
again `--starts` times, as every new agent session starts it, the vectors stored: the first `related` each
time, and on the last start how long until the model is loaded.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from mcp import Client
from mcp.client.stdio import StdioServerParameters

REPO = Path(__file__).resolve().parent.parent
CARD = "blueprint-constraint-rmsnorm-precision-law"


def server(clone: Path) -> StdioServerParameters:
    env = {**os.environ, "KB_DAEMON": "0"}
    return StdioServerParameters(command=sys.executable, args=["-m", "kbtool", "--kb", str(clone), "serve"], env=env)


def noted(result) -> str:  # type: ignore[no-untyped-def]
    notes = [c.text for c in result.content[1:] if c.text.startswith("note:")]
    return " ".join(notes)


async def first_related(clone: Path, card: str, until_similar: bool) -> tuple[float, int, str, float | None]:
    """(seconds of the first related, similar cards in it, its note, seconds from start until similar)."""
    started = time.perf_counter()
    async with Client(server(clone), read_timeout_seconds=600) as client:
        asked = time.perf_counter()
        result = await client.call_tool("related", {"id": card})
        took = time.perf_counter() - asked
        similar = len(result.structured_content["similar"])
        ready = None
        if until_similar:
            while not (await client.call_tool("related", {"id": card})).structured_content["similar"]:
                await asyncio.sleep(0.1)
            ready = time.perf_counter() - started
        return took, similar, noted(result), ready


async def main(starts: int, clone: Path) -> None:
    card = CARD if (clone / "kb" / "constraint" / f"{CARD}.md").exists() else None  # any card will do
    if card is None:
        card = next((clone / "kb").glob("*/*.md")).stem
    took, similar, note, ready = await first_related(clone, card, True)  # builds the index and the vectors
    print(f"fresh clone: first related {took * 1000:.0f} ms, {similar} similar; {note or 'no note'}")
    print(f"  similar cards there (index and vectors built) {ready:.1f} s after the server started")
    runs = [await first_related(clone, card, i == starts - 1) for i in range(starts)]
    for took, similar, note, ready in runs:
        print(f"  first related: {took * 1000:.0f} ms, {similar} similar; {note or 'no note'}")
        if ready is not None:
            print(f"  similar cards there {ready:.1f} s after the server started")
    print(f"first related after a restart, median of {starts}: {statistics.median(r[0] for r in runs) * 1000:.0f} ms")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=3)
    with tempfile.TemporaryDirectory() as tmp:
        clone = Path(tmp) / "starter"
        subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
        asyncio.run(main(parser.parse_args().starts, clone))
