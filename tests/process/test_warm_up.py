"""Never block on warm-up: right after `kb serve` or `kb ui` starts, while the embedding model still
loads, `related`, a card's page and search answer at once from what is ready (the links, the stored
vectors, the keyword leg) and say what is not ready yet; once the model is there, so is the rest.
The model here takes LOAD_S seconds to load, every time (tests/slow_model.py), so an answer that
waited for it cannot pass for one that did not."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from pathlib import Path

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from slow_model import SlowToLoad

import kbtool
from conftest import REPO_ROOT

LOAD_S = 8.0  # the model's load: a wait for it shows as seconds, far past AT_ONCE_S
AT_ONCE_S = 1.0  # an answer that did not wait, with room for a loaded machine
SLOW_MODEL = str(REPO_ROOT / "tests" / "slow_model.py")
LOADING = "similar cards: the embedding model is still loading"
SIMILAR_PARTIAL = "similar cards: among the chunks embedded so far"
KEYWORD_ONLY = "keyword (BM25) results only for now"


@pytest.fixture
def linked(kb: kbtool.KnowledgeBase) -> tuple[kbtool.KnowledgeBase, str, str]:
    """A constraint, a finding that links to it, and cards near them in meaning."""
    rule = kb.add(
        "constraint",
        "Decode latency is judged by TPOT at concurrency 1",
        values={"rule": "Report TPOT in ms at concurrency 1 for every decode latency claim"},
    ).id
    finding = kb.add(
        "finding",
        "FP8 KV cache cuts decode TPOT on H100",
        values={"evidence": [{"metric": "tpot", "value": 3.1}], "links": {"related": [rule]}},
    ).id
    kb.add("failure-mode", "Decode TPOT regresses when CUDA graphs are off", values={"symptom": "slow decode TPOT"})
    kb.add("gap", "Does TPOT at concurrency 64 follow concurrency 1?", values={"priority": "high"})
    return kb, rule, finding


def slow_server(root: Path) -> StdioServerParameters:
    env = {**os.environ, "KB_DAEMON": "0", "PYTHONPATH": os.pathsep.join([str(Path(SLOW_MODEL).parent), *sys.path])}
    return StdioServerParameters(
        command=sys.executable, args=[SLOW_MODEL, str(LOAD_S), "--kb", str(root), "serve"], env=env
    )


def notes_of(result) -> str:  # type: ignore[no-untyped-def]
    return "\n".join(c.text for c in result.content if c.text.startswith("note:"))


async def timed_related(client: Client, card: str) -> tuple[float, object]:
    started = time.monotonic()
    result = await client.call_tool("related", {"id": card})
    return time.monotonic() - started, result


def test_related_answers_at_once_while_the_model_loads_and_in_full_once_it_has(linked):
    kb, rule, finding = linked

    async def go() -> None:
        async with Client(slow_server(kb.root), read_timeout_seconds=120) as client:
            # a fresh index: no stored vector yet, and the model that would make them is loading
            took, first = await timed_related(client, finding)
            assert not first.is_error, first.content[0].text
            assert took < AT_ONCE_S, f"related waited {took:.1f} s for the model"
            assert [link["id"] for link in first.structured_content["links_out"]] == [rule]  # the links: ready now
            assert first.structured_content["similar"] == [] and LOADING in notes_of(first)
            deadline = time.monotonic() + LOAD_S + 60
            # the similar cards in full: every chunk embedded (while some are not, a note says so)
            while not (later := await client.call_tool("related", {"id": finding})).structured_content[
                "similar"
            ] or SIMILAR_PARTIAL in notes_of(later):
                assert time.monotonic() < deadline, "the similar cards never came"
                await asyncio.sleep(0.2)
            assert LOADING not in notes_of(later)
        # the next start, as every agent session starts one: the vectors stored, the model loading again
        async with Client(slow_server(kb.root), read_timeout_seconds=120) as client:
            took, again = await timed_related(client, finding)
            assert took < AT_ONCE_S, f"related waited {took:.1f} s for the model"
            assert again.structured_content["similar"] == later.structured_content["similar"]  # from stored vectors
            assert LOADING not in notes_of(again)

    asyncio.run(go())


def test_the_web_view_answers_at_once_and_says_what_is_not_ready(linked):
    from starlette.testclient import TestClient

    from kbtool.surfaces.web.app import create_app

    kb, rule, finding = linked
    model = SlowToLoad(LOAD_S)
    base = kbtool.open(kb.root, embedder=model)
    base.warm_in_background()  # as `kb ui` does
    client = TestClient(create_app(base, token="t", loopback=True), base_url="http://127.0.0.1")
    started = time.monotonic()
    card = client.get(f"/cards/{finding}")
    took = time.monotonic() - started
    assert card.status_code == 200 and took < AT_ONCE_S, f"the card's page waited {took:.1f} s"
    assert f'href="/cards/{rule}"' in card.text and LOADING in card.text
    started = time.monotonic()
    found = client.get("/search", params={"q": "decode TPOT"})
    took = time.monotonic() - started
    assert found.status_code == 200 and took < AT_ONCE_S, f"search waited {took:.1f} s"
    assert KEYWORD_ONLY in found.text and f'href="/cards/{finding}"' in found.text
    assert base.warm_up.vectors is not None
    base.warm_up.join(LOAD_S + 60)  # the model is loaded and the vectors are stored
    card = client.get(f"/cards/{finding}")
    assert LOADING not in card.text
    similar = card.text.split("<h3>Similar</h3>", 1)[1].split("</ul>", 1)[0]
    assert 'href="/cards/' in similar, similar
    assert KEYWORD_ONLY not in client.get("/search", params={"q": "decode TPOT"}).text
    assert model.loads == 1


SEMANTIC_LOADING = "the semantic leg is still loading"


def test_a_vector_search_answers_at_once_with_no_hits_while_the_model_loads_over_mcp(linked):
    kb, _, finding = linked
    ask = {"query": "decode TPOT", "mode": "vector"}

    async def go() -> None:
        async with Client(slow_server(kb.root), read_timeout_seconds=120) as client:
            started = time.monotonic()
            first = await client.call_tool("search", ask)
            took = time.monotonic() - started
            assert not first.is_error, first.content[0].text
            assert took < AT_ONCE_S, f"a vector search waited {took:.1f} s for the model"
            # no keyword hits passed off as semantic ones: nothing, and why, and what to do
            assert first.structured_content["hits"] == [], first.structured_content["hits"]
            note = notes_of(first)
            assert SEMANTIC_LOADING in note and "retry" in note and "hybrid" in note, note
            deadline = time.monotonic() + LOAD_S + 60
            while not (later := await client.call_tool("search", ask)).structured_content["hits"]:
                assert time.monotonic() < deadline, "the vector hits never came"
                await asyncio.sleep(0.2)
            assert finding in [hit["id"] for hit in later.structured_content["hits"]]
            assert SEMANTIC_LOADING not in notes_of(later)

    asyncio.run(go())


def test_a_vector_search_answers_at_once_with_no_hits_while_the_daemon_loads_the_model(linked, monkeypatch):
    """`kb search --mode vector` over the warm daemon, the daemon's model slow to load."""
    from typer.testing import CliRunner

    from kbtool.surfaces.cli import app
    from kbtool.surfaces.daemon import client as daemon_client

    kb, _, finding = linked
    tests = str(Path(SLOW_MODEL).parent)
    code = (
        f"import sys; sys.path[:0] = [{tests!r}]; import slow_model; from kbtool.search import embeddings; "
        f"model = slow_model.SlowToLoad({LOAD_S}); embeddings.make_embedder = lambda name, base=None: model; "
        "from kbtool.surfaces.daemon.server import main; main(sys.argv[1:])"
    )
    monkeypatch.setattr(daemon_client, "daemon_command", lambda root: [sys.executable, "-c", code, str(root)])
    monkeypatch.delenv("KB_DAEMON", raising=False)
    monkeypatch.setenv("KB_DAEMON_IDLE", "60")
    runner = CliRunner()

    def search(mode: str) -> tuple[float, object]:
        started = time.monotonic()
        result = runner.invoke(app, ["--kb", str(kb.root), "search", "decode TPOT", "--mode", mode, "--json"])
        assert result.exit_code == 0, result.output
        return time.monotonic() - started, result

    try:
        search("bm25")  # starts the daemon, which loads the model in the background
        took, first = search("vector")
        assert took < AT_ONCE_S, f"kb search --mode vector waited {took:.1f} s for the model"
        assert json.loads(first.stdout)["hits"] == []
        assert SEMANTIC_LOADING in first.stderr and "hybrid" in first.stderr, first.stderr
        deadline = time.monotonic() + LOAD_S + 60
        while not json.loads((later := search("vector")[1]).stdout)["hits"]:
            assert time.monotonic() < deadline, "the vector hits never came"
            time.sleep(0.2)
        assert finding in [hit["id"] for hit in json.loads(later.stdout)["hits"]]
        assert SEMANTIC_LOADING not in later.stderr
    finally:
        daemon_client.stop_daemon(kb.root)
