"""The part of the facade that locks gates, runs them and records each run.

Gates (kbtool.curation.gate_lock, kbtool.curation.gates): immutable acceptance checks, locked by hash in kb.lock
with the files their commands run, run in the project they judge, each run recorded."""

from __future__ import annotations

import builtins
import contextlib
import json
import os
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kbtool.curation.gate_runs import gate_run_log, recorded_runs
from kbtool.curation.review import is_unreviewed, reviewed_card
from kbtool.facade.core import KnowledgeBaseCore
from kbtool.model.cards import Finding, Gate
from kbtool.model.contracts import GateRunResult, GateStanding, LockCheck
from kbtool.model.errors import BadInput, Conflict, InvalidCard, KbError
from kbtool.model.records import StoredCard, gate_of
from kbtool.store.commits import checked_reason, commit_message
from kbtool.store.repository import LOCK_FILE

if TYPE_CHECKING:
    from kbtool.curation.gate_lock import GateLock


class Gates(KnowledgeBaseCore):
    """Lock, verify and run gates."""

    def lock_gates(self, refs: Iterable[str] = ()) -> tuple[builtins.list[str], dict[str, str]]:
        """Record the hash of each given gate, or of every confirmed unlocked gate, in kb.lock (one commit),
        with the hash of each knowledge-base file its command runs ("$KB_ROOT/gates/compare.py").

        Returns (the ids locked, {id: why it was skipped}). Without ids only confirmed gates are
        locked: a draft may be an agent's proposal nobody has read, and locking it would make its
        command the project's law. A gate an agent wrote is locked only after review. A gate whose
        file is missing is refused, naming the file; a gate locked before kb locked files gets its
        files locked when named."""
        from kbtool.curation.gate_lock import render_lock

        with self.store.lock():
            locks = self.gate_locks()
            dropped = {gate_id: lock for gate_id, (_, lock) in self.dropped_locks().items()}
            named = list(refs)
            gates = [self.get(r) for r in named] if named else self.list(kind="gate")
            newly: builtins.list[str] = []
            skipped: dict[str, str] = {}
            for stored in gates:
                outcome = self._lock_of(stored, locks.get(stored.id), dropped.get(stored.id), bool(named))
                if isinstance(outcome, str):
                    skipped[stored.id] = outcome
                elif outcome is not None:
                    locks[stored.id] = outcome
                    newly.append(stored.id)
            if newly:
                self.store.write(
                    {LOCK_FILE: render_lock(locks)}, commit_message(f"kb gate lock: {', '.join(newly)}", "gate-lock")
                )
        return newly, skipped

    def _lock_of(
        self, stored: StoredCard, current: GateLock | None, dropped: GateLock | None, named: bool
    ) -> GateLock | str | None:
        """What `kb gate lock` does with one gate: the lock entry to record, why it is skipped, or None when
        its lock stands as it is. named: the gate was asked for by id (a person read it), not swept up."""
        from kbtool.curation.gate_lock import file_problems, gate_hash, lock_entry

        gate = gate_of(stored)
        held = current or dropped
        if (
            dropped is not None
            and held is not None
            and held.sha256 == gate_hash(gate, stored.body)
            and not file_problems(gate, held, self.root)
        ):  # put back as it was locked: its entry returns
            return held
        if held is not None:
            if held.sha256 != gate_hash(gate, stored.body):
                raise Conflict(
                    f"gate {stored.id!r} changed since it was locked; restore it from git, or "
                    f"supersede it with a new gate"
                )
            problems = file_problems(gate, held, self.root)
            if not problems:
                return None
            if held.files:  # a file it runs changed since: that is what the lock is for
                raise Conflict(problems[0][1])
            if not named:
                return "locked before kb locked the files it runs; read them, then lock it by id"
        elif is_unreviewed(stored.card):
            if named:
                raise BadInput(
                    f"gate {stored.id!r} was written by {stored.card.provenance.agent} and nobody has "
                    f"reviewed it; read its command, then `kb confirm {stored.id}` before locking it"
                )
            return f"written by {stored.card.provenance.agent}, not reviewed"
        elif not named and stored.card.status != "confirmed":
            return f"{stored.card.status}, not confirmed"
        try:
            return lock_entry(gate, stored.body, self.root)
        except BadInput as exc:  # what it runs cannot be locked: a sweep names it and locks the others
            if named:
                raise
            return str(exc).removeprefix(f"gate {stored.id!r} ")

    def verify_gates(self) -> LockCheck:
        """Every locked gate, and each file its lock covers, against kb.lock and kb.lock's history: ok, how
        many are locked, and each mismatch (a lock changed by a commit other than a relock among them)."""
        from kbtool.curation.checks import gate_lock_problems

        locks = self.gate_locks()
        problems = gate_lock_problems(self.store, locks, self.dropped_locks(), self.lock_history())
        ok = not any(p.severity == "error" for p in problems)  # a shallow clone's unchecked history: a warning
        return LockCheck(ok=ok, locked=len(locks), problems=problems)

    def gate_project(self, in_dir: str | os.PathLike[str] | None, default_dir: Path | None = None) -> Path:
        """The project folder a gate judges: in_dir, else kb.toml's [gates] project (relative to the root),
        else default_dir (the CLI's: the git repository it runs in). Without any, refused: a gate run on
        the knowledge base itself judges nothing and records a failure."""
        configured = self.config.gates.project
        if in_dir is not None:
            said, project = f"--in {in_dir}", Path(in_dir).expanduser()
        elif configured:
            said, project = f"kb.toml [gates] project = {configured!r}", self.root / Path(configured).expanduser()
        elif default_dir is not None:
            said, project = str(default_dir), default_dir
        else:
            raise BadInput(
                "say which project the gate judges: in_dir (--in DIR), or a default in kb.toml, "
                '[gates] project = "PATH"; nothing was run'
            )
        if not project.is_dir():
            raise BadInput(f"{said}: no such folder")
        return project.resolve()

    def run_gate(
        self,
        ref: str,
        record: bool = True,
        in_dir: str | os.PathLike[str] | None = None,
        confirms: str | None = None,
        before: Callable[[str, Path], None] | None = None,
        require_lock: bool = False,
        default_dir: Path | None = None,
    ) -> GateRunResult:
        """Run a gate's check in the project it judges (gate_project: in_dir, kb.toml [gates] project,
        else default_dir) and compare.

        Nothing runs when kb.lock cannot be read, or when the gate is locked and its file, or a file
        its command runs, no longer matches the lock (someone edited the command, the threshold or the
        script by hand): the lock is what makes a gate's verdict mean something. before(what, folder)
        is called just before the check runs, so a caller can show what is about to run.

        The check's inputs (kbtool/curation/gate_inputs.py) are hashed before and after it runs: a pass
        whose inputs changed on the way is not one. The run, with those hashes, the project and its
        state, is sealed and appended to runs/gates/<id>.jsonl in one commit (_record_gate_run). With
        confirms, a locked gate that passes confirms that finding in the same commit (its reviewer is
        recorded as gate:<id>), only when the finding's evidence is this run's own measurement
        (kbtool/curation/gate_confirms.py): refused before anything runs when that is known then."""
        from kbtool.curation.gate_confirms import refusal_before
        from kbtool.curation.gate_inputs import first_change, inputs_of
        from kbtool.curation.gates import run_gate

        stored = self.get(ref)
        gate = gate_of(stored)
        intact = self._runnable(stored, gate, require_lock)
        target = self.get(confirms) if confirms else None
        if target is not None:
            if not isinstance(target.card, Finding):
                raise InvalidCard(f"--confirms {target.id}: a gate confirms findings, and this is a {target.card.kind}")
            if not record:
                raise BadInput("--confirms records its verdict; it cannot be combined with --no-record")
            if not intact:
                raise BadInput(f"--confirms: gate {stored.id!r} is not locked; only a locked gate confirms findings")
        project = self.gate_project(in_dir, default_dir)
        lock = self.gate_locks().get(stored.id)
        inputs = inputs_of(gate, stored.body, lock, self.root, project)  # what the verdict is computed from
        if target is not None and isinstance(target.card, Finding):
            why = refusal_before(gate, target.card, inputs)
            if why is not None:
                raise BadInput(f"--confirms {target.id}: {why}; nothing was run")
        if record:
            self.store.require_writable()  # said before the command runs, not after: a run is recorded or not run
            self.store.inside(gate_run_log(stored.id))  # a log that is a link out of the knowledge base: refused first
        if before is not None:
            before(gate.check.what(), project)
        result = run_gate(gate, cwd=str(project), kb_root=str(self.root))
        after = inputs_of(gate, stored.body, self.gate_locks().get(stored.id), self.root, project)
        moved = first_change(inputs, after)
        if moved is not None and result.passed:  # judged from inputs that were not one thing: no verdict
            detail = f"{moved} changed while the gate ran; no pass is recorded ({result.detail})"
            result = result.model_copy(update={"passed": False, "detail": detail})
        if record:
            result = self._record_gate_run(stored.id, gate, result, project, after, target)
        return result

    def _runnable(self, stored: StoredCard, gate: Gate, require_lock: bool) -> bool:
        """Refuse a gate nobody accepted, or one whose lock no longer matches it or the files it runs (or, with
        require_lock, one not locked): nothing may run then. Whether it is locked and matches its lock."""
        from kbtool.curation.gate_lock import cache_problems, file_problems, gate_hash, named_files

        if is_unreviewed(gate):
            raise BadInput(
                f"gate {stored.id!r} was written by {stored.card.provenance.agent} and nobody has reviewed "
                f"its command; read it, then `kb confirm {stored.id}` before running it"
            )
        if gate.status == "draft":  # text from a card runs only once a person has accepted it
            raise BadInput(
                f"gate {stored.id!r} is a draft, so nothing was run; read its check ({gate.check.what()}), "
                f"then `kb confirm {stored.id}` to run it (and `kb gate lock {stored.id}` to make it immutable)"
            )
        locked = self.gate_locks().get(stored.id)  # a kb.lock that does not parse stops here, one line
        dropped = self.dropped_locks().get(stored.id)
        if locked is None and dropped is not None:
            from kbtool.curation.checks import dropped_lock_message

            raise Conflict(f"nothing was run: {dropped_lock_message(stored.id, dropped[0])}")
        if locked is not None:
            self._untampered(stored, locked)
        intact = locked is not None and locked.sha256 == gate_hash(gate, stored.body)
        if locked is not None and not intact:
            raise Conflict(
                f"gate {stored.id!r} has changed since it was locked in kb.lock, so nothing was run; restore it "
                f"(git checkout -- {stored.path}) or add a new gate and `kb supersede {stored.id} NEW_GATE`"
            )
        changed = file_problems(gate, locked, self.root) if intact and locked is not None else []
        if changed:
            raise Conflict(f"nothing was run: {changed[0][1]}")
        for _, why in cache_problems(gate, self.root) if locked is not None else []:
            self.note(why)  # never loaded (kb runs gates with caches out of reach), and still worth removing
        named = named_files(gate, self.root)
        if named.links:  # locked or not: nothing runs through a symbolic link out of the knowledge base
            raise BadInput(f"nothing was run: gate {stored.id!r} runs {named.outside_why(next(iter(named.links)))}")
        if locked is None and require_lock:  # for callers who run no command a person has not locked
            raise BadInput(
                f"gate {stored.id!r} is not locked, so nothing was run; only a locked gate runs here (a person "
                f"reads its command, then `kb gate lock {stored.id}`)"
            )
        if locked is None:
            self.note(f"gate {stored.id} is not locked (`kb gate lock {stored.id}` makes its check immutable)")
        return intact

    def _untampered(self, stored: StoredCard, locked: GateLock) -> None:
        """Refuse a gate whose kb.lock entry a commit other than a person's relock made, or that is changed on
        disk and not committed: its lock no longer says what a person accepted (kbtool/store/lock_history.py)."""
        history = self.lock_history()
        tampering = history.tampered.get(stored.id)
        if tampering is not None:
            raise Conflict(f"nothing was run: {tampering.message(stored.path)}")
        if history.uncommitted(stored.id, locked):
            raise Conflict(
                f"nothing was run: kb.lock's entry of gate {stored.id!r} is changed and not committed; restore it "
                f"(git checkout -- {LOCK_FILE}), or, a person who has read the change, `kb gate relock {stored.id} "
                "--reason TEXT`"
            )

    def _record_gate_run(
        self,
        gate_id: str,
        gate: Gate,
        result: GateRunResult,
        project: Path,
        inputs: dict[str, Any],
        target: StoredCard | None,
    ) -> GateRunResult:
        """The one writer of a gate's run log: the run, with what it judged (inputs), the project it ran in
        (from the root, so it can be judged again) and that project's state, sealed (kbtool.curation.gate_seal)
        and appended to runs/gates/<id>.jsonl in one commit; a passing run confirms target in the same commit
        when target's evidence is this run's own measurement (kbtool.curation.gate_confirms). The result,
        saying what it confirmed."""
        from kbtool.curation.gate_confirms import refusal_after
        from kbtool.curation.gate_runs import GATE_RUNS_DIR
        from kbtool.curation.gate_seal import SEAL, remember_newest, seal
        from kbtool.curation.project_state import state_of
        from kbtool.evidence.provenance import repo_state
        from kbtool.store.secrets import redact_record

        rel = gate_run_log(gate_id)
        judged = repo_state(project)
        state = state_of(project, leave_out=self.root / GATE_RUNS_DIR)
        with self.store.lock():
            path = self.store.inside(rel)
            earlier = path.read_text(encoding="utf-8") if path.exists() else ""
            confirms = None
            writes: dict[str, str | bytes | None] = {}
            if target is not None:
                current = self.get(target.id)  # as it stands now, under the lock
                why = (
                    refusal_after(gate, current.card, current.id, result.value, inputs)
                    if isinstance(current.card, Finding)
                    else f"{current.id} is no longer a finding"
                )
                if not result.passed:
                    why = "the gate did not pass"
                if why is None:
                    writes[current.path] = self._render(
                        reviewed_card(current, "confirmed", f"gate:{gate_id}"), current.body, current.path
                    )
                    confirms = target.id
                result = result.model_copy(
                    update={"confirmation": f"confirmed {target.id}" if why is None else f"confirms nothing: {why}"}
                )
            made = {
                **result.record(),
                **({"repo": judged} if judged else {}),
                "project": os.path.relpath(project, self.root),
                "inputs": inputs,
                **({"state": state.record()} if state is not None else {}),
            }
            # a run is recorded whatever its output held: a credential in it is redacted, not committed
            kept = redact_record(made)
            try:
                kept = seal(kept, gate_id, self.root)
            except OSError as exc:  # recorded, but it can never count as met: said
                self.note(f"the run is recorded without kb's seal, so it makes no gate met: {exc}")
            writes[rel] = earlier + json.dumps(kept, ensure_ascii=False) + "\n"
            subject = f"kb gate run {gate_id}: {'pass' if result.passed else 'fail'}"
            self.store.write(writes, commit_message(subject, "gate-run", id=gate_id, confirms=confirms))
            if SEAL in kept:
                with contextlib.suppress(OSError):  # without the note, the newest sealed record stands
                    remember_newest(kept, gate_id, self.root)
        return result

    def gate_standing(self, gate_id: str, default_dir: Path | None = None) -> GateStanding:
        """A locked gate as the goal stands on it (kbtool/curation/standing.py): its newest run kb made here,
        checked against the files now in the project it ran in. With no run of kb's, a comparison is judged
        again at once from the project's files (gate_project: kb.toml [gates] project, else default_dir),
        which records nothing and says so; any other gate is unverified until it is run."""
        from kbtool.curation.standing import judged_now, newest_sealed

        try:
            stored = self.get(gate_id)
            gate = gate_of(stored)
        except KbError as exc:
            return GateStanding(id=gate_id, title=gate_id, check=f"unreadable: {exc}", verdict="never run", why="-")
        title, check = stored.card.title, gate.check.what()
        runs = self.gate_runs(gate_id)
        if not runs:
            return GateStanding(id=gate_id, title=title, check=check, verdict="never run", why="no run yet")
        newest = newest_sealed(runs, gate_id, self.root)
        last = newest.record
        if newest.missing:
            why = f"the newest run kb made here is gone from {gate_run_log(gate_id)} (removed since); run the gate"
            return GateStanding(id=gate_id, title=title, check=check, verdict="unverified", why=why)
        if last is None:
            return self._judged_again(stored, gate, newest.others, default_dir)
        current, why = judged_now(last, gate, stored.body, self.gate_locks().get(gate_id), self.root)
        verdict = "pass" if last.get("passed") else "fail"
        said = f"{verdict} at {last.get('time')}: {last.get('detail') or ''}".rstrip(": ")
        if newest.others_after:
            plural = "s" if newest.others_after > 1 else ""
            why += f"; {newest.others_after} newer record{plural} kb did not make here, ignored"
        return GateStanding(
            id=gate_id, title=title, check=check, verdict=verdict, last_run=last.get("time"), current=current,
            why=f"{said}; {why}",
        )  # fmt: skip

    def _judged_again(self, stored: StoredCard, gate: Gate, others: int, default_dir: Path | None) -> GateStanding:
        """A gate whose records are none of them kb's: a comparison judged now, anything else unverified."""
        from kbtool.curation.gate_lock import gate_hash
        from kbtool.curation.gates import run_gate

        title, check = stored.card.title, gate.check.what()
        records = "the record is not one" if others == 1 else f"the {others} records are not ones"
        unverified = f"{records} kb made here (no valid seal); run the gate"
        lock = self.gate_locks().get(stored.id)
        if gate.check.compare is None or lock is None or lock.sha256 != gate_hash(gate, stored.body):
            return GateStanding(id=stored.id, title=title, check=check, verdict="unverified", why=unverified)
        try:
            project = self.gate_project(None, default_dir)
        except BadInput:
            return GateStanding(id=stored.id, title=title, check=check, verdict="unverified", why=unverified)
        result = run_gate(gate, cwd=str(project), kb_root=str(self.root))  # a comparison: read, never a command
        said = result.line().replace(f"{stored.id}: ", "", 1)  # "pass: 1.37 >= 1.2 (what was compared)"
        return GateStanding(
            id=stored.id, title=title, check=check, verdict="pass" if result.passed else "fail", current=True,
            why=f"judged again now by kb (no record is one kb made here): {said}",
        )  # fmt: skip

    def gate_runs(self, gate_id: str) -> builtins.list[dict[str, Any]]:
        """A gate's recorded runs, oldest first (kbtool/curation/gate_runs.py)."""
        return recorded_runs(self.root, gate_id)

    def relock_gate(self, ref: str, reason: str, agent: str | None = None) -> str | None:
        """A person's relock: the one way a locked gate's kb.lock entry changes. The gate card and every file
        its lock covers are hashed anew and kb.lock committed, with the gate's own changed files if they are
        not committed yet, in one commit whose message names the op (kb-op: gate-relock), the gate, the reason
        and who (kb-by); kb.lock's history takes such a commit as legitimate, and no other that changes an
        entry (kbtool/store/lock_history.py). Returns the commit, or None when the gate matches its lock and
        its history is clean (nothing written). An agent is refused: relocking is a person's review."""
        from kbtool.curation.gate_lock import lock_entry, render_lock
        from kbtool.store.git_identity import author_name

        if agent is not None:
            raise BadInput(f"{agent} is an agent: a person relocks a gate, after reading what changed; nothing written")
        if not reason or not reason.strip():
            raise BadInput(
                "say why the lock changes: --reason TEXT (it goes into the commit, for kb log); nothing written"
            )
        checked_reason(reason)
        with self.store.lock():
            stored = self.get(ref)
            gate = gate_of(stored)
            if is_unreviewed(stored.card):
                raise BadInput(
                    f"gate {stored.id!r} was written by {stored.card.provenance.agent} and nobody has reviewed it; "
                    f"read its command, then `kb confirm {stored.id}`; nothing written"
                )
            locks = self.gate_locks()
            dropped = self.dropped_locks().get(stored.id)
            held = locks.get(stored.id) or (dropped[1] if dropped else None)
            if held is None:
                raise BadInput(
                    f"gate {stored.id!r} is not locked, so there is nothing to relock; `kb gate lock {stored.id}`"
                )
            fresh = lock_entry(gate, stored.body, self.root)
            history = self.lock_history()
            if (
                stored.id in locks
                and (fresh.sha256, fresh.files) == (held.sha256, held.files)
                and stored.id not in history.tampered
                and not history.uncommitted(stored.id, held)
            ):
                return None
            entry = replace(fresh, relocks=held.relocks + 1)  # kb.lock changes, so history holds this commit
            writes: dict[str, str | bytes | None] = {LOCK_FILE: render_lock({**locks, stored.id: entry})}
            writes.update(self._uncommitted_files([stored.path, *held.files, *entry.files]))
            said = " ".join(reason.split())
            subject = f"kb gate relock {stored.id}: {said if len(said) <= 60 else said[:57] + '...'}"
            who = author_name(self.store.repo) or "unknown"
            return self.store.write(writes, commit_message(subject, "gate-relock", reason, id=stored.id, by=who))

    def _uncommitted_files(self, paths: builtins.list[str]) -> dict[str, str | bytes | None]:
        """The current content of those of paths git sees changed, new or deleted (ignored files aside), to
        commit with a relock: None for a deleted one, an executable kept executable."""
        from kbtool.store.atomic_files import Executable

        listed = self.store.repo.git.status(
            "--porcelain", "-z", "--no-renames", "--untracked-files=all", "--", *sorted(set(paths))
        )
        out: dict[str, str | bytes | None] = {}
        for item in listed.split("\0"):
            if len(item) < 4:
                continue
            rel = item[3:]
            path = self.root / rel
            if not path.is_file():
                out[rel] = None
            else:
                data = path.read_bytes()
                out[rel] = Executable(data) if os.access(path, os.X_OK) else data
        return out
