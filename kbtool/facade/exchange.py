"""The part of the facade that writes a whole knowledge base as JSON Lines and reads it back.

A whole knowledge base as JSON Lines, out and back in (the format: kbtool.store.exchange): its cards, each
locked gate's lock with the files its command runs, its skills and kb.toml. An import is one commit; it never
replaces a locked gate, its lock, a file here that differs from the export's or holds uncommitted changes, nor
this knowledge base's identity ([kb] in kb.toml). A gate's run log never travels: a pass is kb's to compute
where it is judged (a line of another machine's log, or a forged one, would be trusted as one)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model import markdown
from kbtool.model.applicability import Environment, nothing_to_judge
from kbtool.model.cards import Gate
from kbtool.model.contracts import ImportSummary
from kbtool.model.errors import BadInput, Conflict, KbError
from kbtool.model.records import StoredCard, gate_of
from kbtool.model.vocabulary import CONFIG_FILE
from kbtool.store.commits import commit_message
from kbtool.store.repository import LOCK_FILE, SKILLS_DIR

if TYPE_CHECKING:
    from kbtool.curation.gate_lock import GateLock
    from kbtool.store.exchange import Stream

SELECTION_LEAVES = "skills and kb.toml: a selection (--where, --for) carries its cards and their gates' locks"
CARRIED_ELSEWHERE = {".gitignore", CONFIG_FILE, LOCK_FILE}  # kb init writes the first; the others are records


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _said(written: Iterable[str]) -> str:
    """What an import wrote besides cards, in a few words however many skill files it holds."""
    rels = list(written)
    parts = [p for p in (LOCK_FILE, CONFIG_FILE) if p in rels]
    counts = {"skill file(s)": sum(r.startswith(f"{SKILLS_DIR}/") for r in rels)}
    counts["file(s) gates run"] = len(rels) - len(parts) - sum(counts.values())
    return ", ".join(parts + [f"{n} {what}" for what, n in counts.items() if n])


class Exchange(KnowledgeBaseCore):
    """`kb export --format jsonl` and `kb import FILE.jsonl`."""

    def export_cards(
        self,
        fmt: str = "jsonl",
        where: Iterable[str] = (),
        applies_for: Environment = None,
        only_applying: bool = False,
    ) -> list[str]:
        """The knowledge base as lines of JSON: a header, every card (matching where) in path order, each
        exported gate's lock, files and run log, and (unless a selection) every skill file and kb.toml. For
        an environment (applies_for over kb.toml [environment]) each card says how it applies, those scoped
        elsewhere last (or left out, only_applying). What it cannot carry is in the header and a notice."""
        from kbtool.store.exchange import FORMATS, export_lines, header_line

        if fmt not in FORMATS:
            raise BadInput(f"--format {fmt}: kb exports {', '.join(FORMATS)}")
        where = list(where)
        cards = sorted(self.list(where=where), key=lambda c: c.path)
        environment = self.environment_for(applies_for)
        if not environment:
            if only_applying:
                raise nothing_to_judge()
            lines = list(export_lines(cards))
        else:
            judged = self.judge(cards, lambda c: c.card.applies_to.model_dump(), environment, only_applying)
            cards = [c for c, _ in judged]
            lines = list(export_lines(cards, {c.id: how for c, how in judged}))
        left: list[str] = []
        lines += self._gate_lines([c for c in cards if c.card.kind == "gate"], left)
        if where or applies_for or only_applying:  # kb.toml's own [environment] alone selects nothing
            left.append(SELECTION_LEAVES)
        else:
            lines += self._whole_kb_lines(left)
        for why in left:
            self.note(f"left out: {why}")
        return [header_line(self.config.kb.name, left), *lines]

    def _gate_lines(self, gates: list[StoredCard], left: list[str]) -> list[str]:
        """Each locked gate's lock (a lock kb.lock no longer holds still binds: carried as one) with the files
        its command runs. A locked gate whose files changed since is refused: its lock could not be checked
        where it lands. An unlocked gate's files, a lock covering a file no import takes
        (kbtool.curation.gate_lock.arrival_refusal) and the gates' run logs stay here, said."""
        from kbtool.curation.gate_lock import arrival_refusal, file_problems, named_files
        from kbtool.curation.gate_runs import GATE_RUNS_DIR, gate_run_log
        from kbtool.store.exchange import file_line, lock_line

        locks = self.gate_locks()
        locks.update({gate_id: lock for gate_id, (_, lock) in self.dropped_locks().items()})
        lines: list[str] = []
        logs = 0
        for stored in gates:
            gate, lock = gate_of(stored), locks.get(stored.id)
            logs += (self.root / gate_run_log(stored.id)).is_file()
            named = named_files(gate, self.root)
            left += [f"gate {stored.id!r} runs {named.outside_why(p)}" for p in named.outside]
            left += [f"gate {stored.id!r} runs $KB_ROOT/{p}, which is missing" for p in named.missing]
            refused = [(p, why) for p in sorted(lock.files if lock else ()) if (why := arrival_refusal(p))]
            if lock is None and named.hashes:
                left.append(
                    f"the files gate {stored.id!r} runs ({', '.join(sorted(named.hashes))}): it is not locked, and an "
                    f"import takes only a locked gate's files (kb gate lock {stored.id})"
                )
            elif refused:
                left.append(f"the lock and files of gate {stored.id!r}: it runs {refused[0][0]} ({refused[0][1]})")
            elif lock is not None:
                problems = file_problems(gate, lock, self.root)
                if problems:
                    raise BadInput(f"{problems[0][1]}; nothing exported")
                lines.append(lock_line(stored.id, lock.sha256, lock.files))
                lines += [file_line("file", p, (self.root / p).read_bytes()) for p in sorted(lock.files)]
        if logs:
            left.append(f"{logs} gate run log(s) ({GATE_RUNS_DIR}/): a pass is judged where a gate runs, not carried")
        return lines

    def _whole_kb_lines(self, left: list[str]) -> list[str]:
        """Every skill file git tracks (as bytes: text, or base64) and kb.toml; the tracked files no record
        carries are said, not silently dropped (the gates' run logs by _gate_lines)."""
        from kbtool.curation.gate_runs import GATE_RUNS_DIR
        from kbtool.store.exchange import config_line, file_line, without_folder_sources

        tracked = [p for p in self.store.repo.git.ls_files("-z").split("\0") if p]
        lines: list[str] = []
        for rel in tracked:
            if rel.startswith(f"{SKILLS_DIR}/") and rel.count("/") >= 2:
                if (self.root / rel).is_symlink():
                    left.append(f"{rel}: a symbolic link")
                elif any(part.startswith(".") for part in rel.split("/")):
                    left.append(f"{rel}: hidden, and kb skill import takes no hidden file")
                elif (self.root / rel).is_file():
                    lines.append(file_line("skill-file", rel, (self.root / rel).read_bytes()))
        config, dropped = without_folder_sources((self.root / CONFIG_FILE).read_text(encoding="utf-8"))
        lines.append(config_line(config))
        left += dropped
        runs = {f"{GATE_RUNS_DIR}/{p.stem}.jsonl" for p in self.store.card_files() if p.parent.name == "gate"}
        run_by_gates = self._files_gates_run()
        others = [
            p
            for p in tracked
            if p not in CARRIED_ELSEWHERE
            and p not in runs
            and not p.startswith(("kb/", f"{SKILLS_DIR}/"))
            and not any(p == base or p.startswith(base + "/") for base in run_by_gates)
        ]
        if others:
            shown = ", ".join(others[:3]) + (", ..." if len(others) > 3 else "")
            left.append(f"{len(others)} other file(s) git tracks here ({shown}): no record carries them")
        return lines

    def _files_gates_run(self) -> set[str]:
        """The files gates' locks cover (every file under the folder of what a command runs): carried with their
        gates, or said with them (kbtool.facade.exchange._gate_lines)."""
        from kbtool.curation.gate_lock import named_files

        return {p for s in self.list(kind="gate") for p in named_files(gate_of(s), self.root).hashes}

    def import_cards(self, path: str | os.PathLike[str]) -> ImportSummary:
        """A JSON Lines export, in one commit: cards added or updated (never a locked gate), the gates'
        locks and files, the skills' files, and kb.toml's settings when this knowledge base's is still as
        `kb init` wrote it (its identity, [kb], kept); anything bad in the file refuses the whole of it. Run
        logs (of an older export) are left out, said."""
        from kbtool.store.exchange import read_stream

        source = Path(path)
        try:
            text = source.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BadInput(f"{path}: cannot read ({exc})") from None
        stream = read_stream(text, source.name, self.config.limits.import_bytes)
        self._check_stream(stream, source.name)
        with self.store.lock():
            writes, counts = self._card_writes(stream, source.name)
            others = self._gate_writes(stream, source.name)
            others.update(self._skill_writes(stream))
            others.update(self._config_write(stream, source.name))
            writes.update(others)
            self.store.refuse_uncommitted(writes, source.name)
            commit = None
            if writes:
                subject = f"kb import {source.name}: {counts[0]} added, {counts[1]} updated"
                commit = self.store.write(writes, commit_message(subject, "import"))
        if others:
            self.note(f"also written: {_said(others)}")
        if stream.runs:
            self.note(
                f"left out: {len(stream.runs)} gate run log(s) of {source.name}: a gate's pass is judged here, "
                "never taken from elsewhere"
            )
        if writes:
            self._refresh_lexical()
        return ImportSummary(
            collection=source.name, added=counts[0], updated=counts[1], unchanged=counts[2], retired=0, commit=commit
        )

    def _check_stream(self, stream: Stream, origin: str) -> None:
        """Each lock against its gate and its files, each file against the locks, the skills, and kb.toml. A
        file arrives only as a locked gate's (the lock that comes with it lists it, with its hash, and the
        gate's command runs it), under gates/, never hidden: anything else (an agent's settings, a CI
        workflow, a raw card, a run log, git's hooks, an unlocked gate's script) refuses the import."""
        from kbtool.curation.gate_lock import arrival_refusal, gate_hash
        from kbtool.store.config import parse_config

        gates = {card.id: (card, body) for card, body in stream.cards if isinstance(card, Gate)}
        for gate_id, (sha, files) in stream.locks.items():
            card, body = gates[gate_id]
            if gate_hash(card, body) != sha:
                raise BadInput(f"{origin}: the lock of gate {gate_id!r} does not match the gate in the export")
            runs = _stream_folders(card, self.root, set(stream.files))
            for rel, locked in files.items():
                why = arrival_refusal(rel)
                if why is None and not any(rel.startswith(f"{folder}/") for folder in runs):
                    why = f"the lock of gate {gate_id!r} lists it, but its command does not run it"
                if why is not None:
                    raise BadInput(f"{origin}: {rel}: {why}; nothing written")
                if rel not in stream.files or _sha(stream.files[rel]) != locked:
                    raise BadInput(f"{origin}: {rel}, which locked gate {gate_id!r} runs, is missing or changed")
        carried = {rel for _, files in stream.locks.values() for rel in files}
        for rel in stream.files:
            if rel not in carried:
                why = arrival_refusal(rel) or "not a file a locked gate of the export runs ($KB_ROOT/PATH)"
                raise BadInput(f"{origin}: {rel}: {why}; nothing written")
        _refuse_skills(stream, self.root, self.config.limits.skill_bytes, origin)
        if stream.config is not None:
            try:
                parse_config(stream.config)
            except KbError as exc:
                raise BadInput(f"{origin}: {exc}") from None

    def _card_writes(self, stream: Stream, origin: str) -> tuple[dict[str, str | bytes | None], tuple[int, int, int]]:
        existing = {s.id: s for s in self.cards()}
        locked = self.gate_locks()
        writes: dict[str, str | bytes | None] = {}
        added = updated = unchanged = 0
        for card, body in stream.cards:
            rel = self.store.relative(self.store.card_path(card.kind, card.id))
            text_of = self._render(card, body, f"{origin}: {card.id}")
            old = existing.get(card.id)
            if old is not None and old.path != rel:
                raise Conflict(f"{origin}: card {card.id!r} is a {card.kind} there, {old.path} here")
            if old is not None and markdown.render(old.card, old.body) == text_of:
                unchanged += 1
                continue
            if old is not None and card.kind == "gate" and card.id in locked:
                raise Conflict(f"{origin}: gate {card.id!r} differs from the locked one here; nothing written")
            writes[rel] = text_of
            added, updated = (added, updated + 1) if old else (added + 1, updated)
        return writes, (added, updated, unchanged)

    def _gate_writes(self, stream: Stream, origin: str) -> dict[str, str | bytes | None]:
        """kb.lock with the export's locks added, and the files the gates run."""
        from kbtool.curation.gate_lock import GateLock, render_lock

        writes: dict[str, str | bytes | None] = {}
        here = self.gate_locks()
        bound: dict[str, GateLock] = {**{k: v for k, (_, v) in self.dropped_locks().items()}, **here}
        locks = dict(here)
        for gate_id, (sha, files) in stream.locks.items():
            lock = GateLock(sha, files)
            if gate_id in bound and (bound[gate_id].sha256, bound[gate_id].files) != (sha, files):
                raise Conflict(f"{origin}: gate {gate_id!r} is locked here otherwise; nothing written")
            locks[gate_id] = lock
        if locks != here:
            writes[LOCK_FILE] = render_lock(locks)
        for rel, data in stream.files.items():
            file = self.store.inside(rel)
            if file.exists() and (not file.is_file() or file.read_bytes() != data):
                raise Conflict(f"{rel}: here already, and not the file the export's gate runs; nothing written")
            if not file.exists():
                writes[rel] = data
        return writes

    def _skill_writes(self, stream: Stream) -> dict[str, str | bytes | None]:
        writes: dict[str, str | bytes | None] = {}
        for rel, data in stream.skill_files.items():
            file = self.store.inside(rel)
            if not (file.is_file() and file.read_bytes() == data):
                writes[rel] = data
        return writes

    def _config_write(self, stream: Stream, origin: str) -> dict[str, str | bytes | None]:
        """The export's kb.toml settings under this knowledge base's own identity ([kb]: its name and id, which
        copies, sources and teammates' clones know it by), when this one is still as `kb init` wrote it (one
        commit of it, nothing changed since): one edited here, committed or not, is this knowledge base's own
        settings, kept, and that is said."""
        from kbtool.store.exchange import with_identity_of

        mine = (self.root / CONFIG_FILE).read_text(encoding="utf-8")
        if stream.config is None or stream.config == mine:
            return {}
        kept = f"kb.toml: this knowledge base's own is kept; {origin} holds another"
        if self.store.uncommitted([CONFIG_FILE]) or len(self.store.history(CONFIG_FILE)) > 1:
            self.note(kept)
            return {}
        theirs = with_identity_of(stream.config, mine)
        if theirs is None:
            self.note(f"{kept} (its [kb] table could not be set apart from its settings)")
            return {}
        return {} if theirs == mine else {CONFIG_FILE: theirs}


def _refuse_skills(stream: Stream, root: Path, limit: int, origin: str) -> None:
    """A skill the export brings is held to `kb skill import`'s size limit and security scan, whole."""
    from kbtool.skills.arriving import stream_refusals

    refused = stream_refusals(root, stream.skill_files, limit)
    if refused:
        more = f" (and {len(refused) - 1} more skill(s))" if len(refused) > 1 else ""
        raise BadInput(f"{origin}: {refused[0]}{more}; nothing written")


def _stream_folders(gate: Gate, root: Path, files: set[str]) -> list[str]:
    """The folders whose files a gate of an export may bring: the folder of each path its command reaches,
    read against the export's files (a folder it names: that folder)."""
    from kbtool.curation.gate_lock import too_wide
    from kbtool.curation.gate_reach import command_reach

    def there(rel: str) -> bool:
        return rel in files or any(f.startswith(f"{rel}/") for f in files)

    paths = command_reach(gate.check.command, root, there).paths
    folders = [(p.rsplit("/", 1)[0] if "/" in p else "") if p in files else p for p in paths]
    return [f for f in folders if not too_wide(f) and not f.startswith("..")]
