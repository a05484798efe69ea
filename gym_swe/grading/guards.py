"""What guards a repository grade's test run against forged outcomes, written into the task's test files: the
checks calibration found can be sealed, sealed (`seals`), and decoys planted beside the FAIL_TO_PASS tests no
protective sealed check guards (`decoys`), with tokens and decoys drawn afresh for every grade
(`seal_and_plant`); then the run's outcomes and records named back as the task's (`named_back`), and what the
grade says of its protection (`grade_integrity`, `unprotected_ids`, the log's `describe_planting`)."""

from __future__ import annotations

import random
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gym_swe.errors import FileTooLargeError
from gym_swe.grading import seals
from gym_swe.grading.decoy_report import restore, restored_name
from gym_swe.grading.decoys import TARGET_CHANCE, Planting, plant, probe
from gym_swe.grading.diffs import split_diff
from gym_swe.grading.test_ids import parse_test_id
from gym_swe.sandbox.base import Sandbox
from gym_swe.tasks.swe import SWETask

MAX_TEST_FILE_BYTES = 8 * 1024 * 1024


def needles(sealable: Mapping[str, seals.Facts]) -> list[str]:
    """Every spelling of every part of the sealable checks' literals (`seals.public_forms`)."""
    forms = [seals.public_forms(str(facts.get("expected", ""))) for facts in sealable.values()]
    return sorted({form for leaves in forms for leaf in leaves for form in leaf})


def seal_and_plant_in_sandbox(
    sandbox: Sandbox,
    task: SWETask,
    workdir: str,
    sealed: Mapping[str, seals.Facts],
    calibrating: bool,
    decoys: bool,
    pristine: Mapping[str, str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    probing: bool = False,
) -> tuple[seals.Sealing, Planting]:
    """`seal_and_plant` the test files of the task's FAIL_TO_PASS tests in ``sandbox``, as the test patch left
    them, with tokens and decoys drawn afresh for every grade."""
    added: dict[str, set[str]] = {}
    for part in split_diff(task.test_patch):
        if part.new_path is not None:
            lines = part.text.splitlines()
            added[part.new_path] = {
                line[1:].strip() for line in lines if line[:1] == "+" and line[:3] != "+++"
            }
    sources: dict[str, str] = {}
    for path in sorted({t.file for t in map(parse_test_id, task.fail_to_pass) if t.file}):
        try:
            data = sandbox.read_file(f"{workdir}/{path}", max_bytes=MAX_TEST_FILE_BYTES)
        except (FileNotFoundError, IsADirectoryError, FileTooLargeError):
            continue
        sources[path] = data.decode("utf-8", errors="surrogateescape")
    rng = random.Random(secrets.randbits(64))
    known = [*task.fail_to_pass, *task.pass_to_pass]
    sealing, planting, changed = seal_and_plant(
        sources, task.fail_to_pass, known, sealed, calibrating, rng, added, decoys,
        public=f"{task.problem_statement}\n{task.hints_text}", pristine=pristine, inputs=inputs,
        probing=probing,
    )  # fmt: skip
    for path, text in changed.items():
        sandbox.write_file(f"{workdir}/{path}", text.encode("utf-8", "surrogateescape"))
    return sealing, planting


def seal_and_plant(
    sources: Mapping[str, str],
    fail_to_pass: Sequence[str],
    known: Sequence[str],
    sealed: Mapping[str, seals.Facts],
    calibrating: bool,
    rng: random.Random,
    added: Mapping[str, set[str]] | None = None,
    decoys: bool = True,
    public: str = "",
    pristine: Mapping[str, str] | None = None,
    inputs: Mapping[str, Any] | None = None,
    probing: bool = False,
) -> tuple[seals.Sealing, Planting, dict[str, str]]:
    """Seal the checks named in ``sealed`` (all that could be, ``calibrating``), then plant decoys beside the
    FAIL_TO_PASS tests without a protective sealed check (`seals.protective`; none, calibrating: the gold
    patch is the task's own, or without ``decoys``). ``sources``: the test files (path -> text); ``known``:
    all the task's test ids; ``added``: per file, the lines the test patch added; ``inputs``: the input
    leaves calibrated for decoys (`decoy_inputs`). ``probing``: plant the copies that calibrate them instead
    of decoys (`decoys.probe`). Returns the sealing, the planting and the files' new texts."""
    targets = [parse_test_id(raw) for raw in fail_to_pass]
    sealing = seals.Sealing()
    if seals.SEAL_CHECKS and (sealed or calibrating):
        checks = [c for c in seals.candidates(sources, targets, known) if calibrating or c.key in sealed]
        sealing = seals.seal(sources, checks, rng, calibrating)
    changed = dict(sealing.sources)
    planting = Planting()
    if (decoys or probing) and not calibrating:
        sealed_tests = {
            seal.check.node
            for seal in sealing.seals
            if seals.protective(seal.check, sealed.get(seal.check.key))
        }
        unsealed = [target for target in targets if target.node not in sealed_tests]
        if probing:
            planting = probe({**sources, **changed}, unsealed, rng, added, public=public, pristine=pristine)
        else:
            planting = plant({**sources, **changed}, unsealed, rng, added, public=public, pristine=pristine,
                             inputs=inputs)  # fmt: skip
        changed.update(planting.sources)
    return sealing, planting, changed


def named_back(
    sealing: seals.Sealing,
    planting: Planting,
    outcomes: Mapping[str, str],
    records: Sequence[seals.Record],
) -> tuple[dict[str, str], list[seals.Record]]:
    """A run's outcomes and records under the task's names: a renamed original's under its own name again (a
    decoy's, copies of its sealed checks, go), then a sealed table's cases named as pytest would have named
    them (their ids are the grader's tokens)."""
    restored = [
        replace(record, case=name)
        for record in records
        if (name := restored_name(planting.groups, record.case)) is not None
    ]
    return sealing.named(restore(planting.groups, outcomes)), sealing.named_records(restored)


def grade_integrity(
    sealing: seals.Sealing, facts: Mapping[str, seals.Facts], planting: Planting
) -> tuple[str, float]:
    """What stands between a forged report and the reward, and the chance bound of a forger that cannot tell
    a decoy group's members apart: "sealed" (0) when a FAIL_TO_PASS check is sealed that protects it
    (`seals.protective`): then no report or record the run writes earns the reward without that value
    computed right; "decoys" when the decoys' chance bound is at most `TARGET_CHANCE`; else "unprotected"."""
    if any(seals.protective(seal.check, facts.get(seal.check.key)) for seal in sealing.seals):
        return "sealed", 0.0
    return ("decoys" if planting.chance <= TARGET_CHANCE else "unprotected"), planting.chance


def unprotected_ids(task: SWETask, sealing: seals.Sealing, facts: Mapping[str, seals.Facts]) -> set[str]:
    """The FAIL_TO_PASS ids without a protective sealed check of their own: a fraction of the tests counts
    them only in a grade that resolved the task (which every protection of the grade then let through)."""
    protected = {
        seal.check.node for seal in sealing.seals if seals.protective(seal.check, facts.get(seal.check.key))
    }
    return {raw for raw in task.fail_to_pass if parse_test_id(raw).node not in protected}


def probe_copies(planting: Planting) -> int:
    return sum(len(copies) for _, _, copies in planting.probes)


def describe_planting(planting: Planting) -> str:
    """The grade log's line about the decoys (the log is never shown to the agent)."""
    if not planting.groups:
        why = "; ".join(planting.notes) or "every FAIL_TO_PASS test has a strong sealed check"
        return f"decoys: none planted ({why})"
    groups = [
        f"{group.node(group.original)} -> {group.kind}{' (protective)' if group.protective else ''}"
        f"{' (new check)' if group.new else ''}, "
        f"{len(group.members) - 1} decoy(s), original planted as {group.members[group.original_index]}"
        for group in planting.groups
    ]
    return "decoys: " + "; ".join(groups + planting.notes)
