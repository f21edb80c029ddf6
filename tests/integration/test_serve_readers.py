"""kb serve answers reads on a thread of their own: a search never waits behind a write's commit, and a read
after a write sees it (the reader is the same folder opened again, as a second process would)."""

from __future__ import annotations

import asyncio
import threading

import pytest
from mcp import Client

import kbtool
from kbtool.surfaces.mcp.server import build_server


@pytest.fixture(autouse=True)
def hashing(monkeypatch):
    monkeypatch.setenv("KB_EMBEDDER", "hashing")
    monkeypatch.setenv("KB_DAEMON", "0")


def test_a_search_answers_while_a_write_holds_the_writer(kb: kbtool.KnowledgeBase):
    kb.add("constraint", "FP8 KV cache accuracy is gated", values={"rule": "GSM8K within 0.5 points of BF16"})
    server, shelf = build_server(kb)
    stuck = threading.Event()
    shelf.worker.submit(stuck.wait, 60)  # the writer busy, as with a slow commit

    async def go() -> None:
        async with Client(server) as client:
            found = await asyncio.wait_for(client.call_tool("search", {"query": "FP8 KV cache"}), 30)
            assert not found.is_error
            assert [h["title"] for h in found.structured_content["hits"]][0] == "FP8 KV cache accuracy is gated"
            listed = await asyncio.wait_for(client.call_tool("list", {}), 30)
            assert not listed.is_error
            writing = asyncio.ensure_future(
                client.call_tool(
                    "add_finding", {"title": "decode at 120 tok/s on H100", "metrics": {"tok_s": "120tok/s"}}
                )
            )
            await asyncio.sleep(0.5)
            assert not writing.done()  # the write waits for the writer; the reads did not
            stuck.set()
            added = await asyncio.wait_for(writing, 30)
            assert not added.is_error

    try:
        asyncio.run(go())
    finally:
        stuck.set()


def test_a_read_after_a_write_sees_it(kb: kbtool.KnowledgeBase):
    server, _ = build_server(kb)

    async def go() -> None:
        async with Client(server) as client:
            await client.call_tool("search", {"query": "warm the reader"})  # the reader's index exists before
            added = await client.call_tool(
                "add_finding", {"title": "NVFP4 MoE decode at 212 tok/s on B200", "metrics": {"tok_s": "212tok/s"}}
            )
            assert not added.is_error
            new_id = added.structured_content["id"]
            got = await client.call_tool("get", {"id": new_id})
            assert not got.is_error and new_id in got.content[0].text
            found = await client.call_tool("search", {"query": "NVFP4 MoE decode 212"})
            assert new_id in [h["id"] for h in found.structured_content["hits"]]
            listed = await client.call_tool("list", {"kind": "finding"})
            assert new_id in listed.content[0].text

    asyncio.run(go())
