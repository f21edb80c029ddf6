"""The one thread MCP tool calls run on (kbtool/surfaces/mcp_worker.py): reads before writes, no write
starved, and what a call raises handed to its caller."""

from __future__ import annotations

import threading

import pytest

from kbtool.surfaces.mcp_worker import ReadsFirst


def run_order(blocker_writes: bool, queue: list[str], during: dict[str, list[str]] | None = None) -> list[str]:
    """The order calls named R.. (reads) and W.. (writes) run in, queued while a first call holds the worker;
    `during`: calls a running call queues itself (arriving later)."""
    worker = ReadsFirst()
    ran: list[str] = []
    gate = threading.Event()
    futures = []

    def submit(name: str) -> None:
        submit_one = worker.submit_write if name.startswith("W") else worker.submit
        futures.append(submit_one(call, name))

    def call(name: str) -> None:
        ran.append(name)
        for later in (during or {}).get(name, []):
            submit(later)

    futures.append((worker.submit_write if blocker_writes else worker.submit)(gate.wait))
    for name in queue:
        submit(name)
    gate.set()
    while not all(f.done() for f in futures):
        futures[-1].result(timeout=10)
    worker.shutdown()
    return ran


def test_the_reads_queued_while_a_write_ran_go_before_the_next_write():
    assert run_order(True, ["R1", "W2", "R2", "R3"]) == ["R1", "R2", "R3", "W2"]


def test_a_write_waits_for_the_reads_queued_before_it_and_no_read_after():
    assert run_order(False, ["R1", "R2", "W1", "R3"], during={"R1": ["R4"]}) == ["R1", "R2", "W1", "R3", "R4"]
    assert run_order(False, ["W1", "R1", "R2", "W2"]) == ["W1", "R1", "R2", "W2"]


def test_writes_keep_their_order_and_reads_flow_without_writes():
    assert run_order(True, ["W1", "W2", "W3"]) == ["W1", "W2", "W3"]
    assert run_order(False, ["R1", "R2", "R3"]) == ["R1", "R2", "R3"]


def test_what_a_call_raises_reaches_its_caller_and_the_worker_goes_on():
    worker = ReadsFirst()

    def fail() -> None:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        worker.submit_write(fail).result(timeout=10)
    assert worker.submit(lambda: 42).result(timeout=10) == 42
    worker.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        worker.submit(lambda: 1)


def test_a_cancelled_call_never_runs():
    worker = ReadsFirst()
    gate = threading.Event()
    ran: list[str] = []
    worker.submit(gate.wait)
    cancelled = worker.submit_write(ran.append, "cancelled")
    assert cancelled.cancel()
    kept = worker.submit(ran.append, "kept")
    gate.set()
    kept.result(timeout=10)
    worker.shutdown()
    assert ran == ["kept"]
