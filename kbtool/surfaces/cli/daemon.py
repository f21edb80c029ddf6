"""`kb status` and `kb daemon status|stop`: how a knowledge base and its daemons stand.

`kb status` prints KnowledgeBase.status: the index against the files on disk, the vectors, the search daemon,
the `kb serve` and `kb ui` processes and the sources; nothing is refreshed or loaded. The search daemons
`kb search` starts are seen and stopped through this user's registry of them (kbtool/store/daemons.py);
--all reaches every one of this user, of any knowledge base."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from kbtool.model.errors import CheckFailed
from kbtool.surfaces.cli.base import JsonOut, KbPath, app, make_app, open_kb, print_json, root_of, show_notices

daemon_app = make_app("The search daemons `kb search` starts (one per knowledge base): see and stop them.")
app.add_typer(daemon_app, name="daemon")

EveryDaemon = Annotated[bool, typer.Option("--all", help="Every kb search daemon of this user, of any knowledge base.")]


@app.command()
def status(kb: KbPath = None, as_json: JsonOut = False) -> None:
    """The knowledge base, its index against the files on disk, its vectors, its search daemon (pid, memory,
    uptime) and its sources (commit and age); nothing is refreshed or loaded."""
    base = open_kb(kb)
    report = base.status().to_json()
    show_notices(base)
    if as_json:
        print_json(report)
        return
    typer.echo(f"knowledge base {report['name']!r} at {report['root']} (id {report['id'] or 'none: no commit yet'})")
    typer.echo(f"index: {_index_line(report['index'])}")
    typer.echo(f"vectors: {_vectors_line(report['vectors'])}")
    daemon = report["daemon"]
    typer.echo(f"daemon: {_daemon_line(daemon)}" if daemon else "daemon: none running (the next kb search starts one)")
    for server in report.get("servers") or []:
        typer.echo(f"server: {_server_line(server)}")
    for source in report["sources"]:
        typer.echo(f"source {source['name']}: {_source_line(source)}")


def _index_line(index: dict[str, Any]) -> str:
    if not index["built"]:
        return f"not built ({index['on_disk']} files; the first read builds it)"
    if index["current"]:
        return f"current ({index['indexed']} files)"
    return (
        f"stale: {index['to_refresh']} of {index['on_disk']} files new, changed or deleted "
        f"({index['indexed']} indexed; the next read refreshes it)"
    )


def _vectors_line(vectors: dict[str, Any]) -> str:
    if vectors["model"] is None:
        return f"none ({vectors['note']})"
    line = f"{vectors['embedded']} of {vectors['chunks']} chunks embedded by {vectors['model']}"
    if vectors["ready"]:
        return line + (f" (ready; {vectors['note']})" if vectors.get("drafts") else " (ready)")
    return line + f" ({vectors['note'] or 'the first read builds the index'})"


def _server_line(server: dict[str, Any]) -> str:
    """'kb serve at stdio, pid 12, 380 MB resident, up 3.0 min'."""
    return f"kb {server['kind']} at {server['address']}, {_daemon_line(server)}"


def _daemon_line(daemon: dict[str, Any]) -> str:
    memory = f"{daemon['rss_bytes'] / (1 << 20):.0f} MB resident" if daemon["rss_bytes"] is not None else "memory ?"
    return f"pid {daemon['pid']}, {memory}, up {_duration(daemon['uptime_s'])}"


def _source_line(source: dict[str, Any]) -> str:
    where = source["where"] + (f" ({source['ref']})" if source["ref"] else "")
    if source["commit"] is None:
        return f"{where}, no commit (a folder outside git, or run `kb sources update`)"
    fetched = f", fetched {source['fetched_age_days']} days ago" if source.get("fetched") else ""
    vectors = f"; vectors: {_vectors_line(source['vectors'])}" if source.get("vectors") else ""
    return (
        f"{where} at {source['commit'][:12]}, committed {source['committed'][:10]} "
        f"({source['age_days']} days ago){fetched}{vectors}"
    )


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@daemon_app.command("status")
def daemon_status(every: EveryDaemon = False, kb: KbPath = None, as_json: JsonOut = False) -> None:
    """The search daemon of this knowledge base (--all: of every one): pid, memory, uptime."""
    from kbtool.facade.status import daemon_state, server_states
    from kbtool.model.contracts.status import Daemons
    from kbtool.store import daemons, servers

    entries = daemons.all_running() if every else [e for e in [daemons.running(root_of(kb))] if e is not None]
    found = Daemons(
        daemons=[s for s in map(daemon_state, entries) if s is not None],
        servers=server_states(servers.running(None if every else root_of(kb))),
    )
    if as_json:
        print_json(found.to_json())
        return
    for daemon in found.daemons:
        typer.echo(f"{daemon.root}: {_daemon_line(daemon.to_json())}")
    if not found.daemons:
        typer.echo("no kb search daemon is running" + ("" if every else f" for {root_of(kb)}"))
    for server in found.servers:
        typer.echo(f"{', '.join(server.roots)}: {_server_line(server.to_json())}")


@daemon_app.command("stop")
def daemon_stop(every: EveryDaemon = False, kb: KbPath = None) -> None:
    """Stop the search daemon of this knowledge base (--all: every one of this user); the next kb search starts
    a fresh one. Exit 1 when one would not stop."""
    from kbtool.store import daemons
    from kbtool.surfaces.daemon.client import stop_daemon, stop_running

    if not every:
        root = root_of(kb)
        entry = daemons.running(root)
        if stop_daemon(root):
            typer.echo(f"stopped the kb search daemon of {root}" + (f" (pid {entry.pid})" if entry else ""))
        elif entry is not None:
            raise CheckFailed(f"kb daemon {entry.pid} of {root} did not exit")
        else:
            typer.echo(f"no kb search daemon is running for {root}")
        return
    stubborn = []
    entries = daemons.all_running()
    for entry in entries:
        if stop_running(entry):
            typer.echo(f"stopped the kb search daemon of {entry.root} (pid {entry.pid})")
        else:
            stubborn.append(f"{entry.pid} ({entry.root})")
    if not entries:
        typer.echo("no kb search daemon is running")
    if stubborn:
        raise CheckFailed(f"kb daemon(s) did not exit: {', '.join(stubborn)}")
