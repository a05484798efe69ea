"""What the default pays (issue 32): a grade's integrity decides whether SWEGym-v0 pays it, a fraction of the
tests counts a FAIL_TO_PASS test without a protective seal of its own only when the task resolved, and
`gym-swe validate` reports the protected share per repository."""

from __future__ import annotations

import time
from dataclasses import replace

import gymnasium
import pytest

from gym_swe.grading.base import Grade, TestResult
from gym_swe.grading.repository import _result
from gym_swe.tasks.swe import load_swe_tasks
from gym_swe.validate import protection, protection_summary

TASK = load_swe_tasks("bundled").get("gymswe__semverkit-2")


def _grade(outcomes: dict[str, str], unprotected: set[str], reward: str = "fraction") -> Grade:
    return _result(TASK, "", outcomes, reward, [], time.monotonic(), unprotected=unprotected)


def test_a_fraction_pays_an_unprotected_pass_only_in_a_grade_that_resolved() -> None:
    f2p, p2p = list(TASK.fail_to_pass), list(TASK.pass_to_pass)
    total = len(f2p) + len(p2p)
    everything = dict.fromkeys(f2p + p2p, "passed")
    assert _grade(everything, set(f2p)).reward == 1.0  # resolved: every protection let it through
    one_short = {**everything, f2p[0]: "failed"}
    # f2p[1] passed, but only decoys (or nothing) protect it: it counts for nothing unresolved
    assert _grade(one_short, set(f2p)).reward == pytest.approx(len(p2p) / total)
    # with a protective sealed check of its own, it counts
    assert _grade(one_short, {f2p[0]}).reward == pytest.approx((len(p2p) + 1) / total)
    # binary is unchanged
    assert _grade(one_short, set(f2p), "binary").reward == 0.0


def _paid(integrity: str, grade: Grade) -> Grade:
    env = gymnasium.make("SWEGym-v0", integrity=integrity)
    try:
        return env.unwrapped._paid(grade)  # type: ignore[attr-defined,no-any-return]
    finally:
        env.close()


@pytest.mark.parametrize(
    ("integrity", "kind", "paid"),
    [
        ("protected", "sealed", True), ("protected", "decoys", True), ("protected", "unprotected", False),
        ("sealed", "sealed", True), ("sealed", "decoys", False), ("sealed", "unprotected", False),
        ("any", "sealed", True), ("any", "decoys", True), ("any", "unprotected", True),
    ],
)  # fmt: skip
def test_what_each_integrity_pays(integrity: str, kind: str, paid: bool) -> None:
    chance = {"sealed": 0.0, "decoys": 0.015, "unprotected": 0.25}[kind]
    grade = Grade(
        tests=(TestResult("t", "passed"),), resolved=True, reward=1.0, integrity=kind, chance=chance
    )
    result = _paid(integrity, grade)
    if paid:
        assert result == grade
    else:
        assert result.reward == 0.0 and not result.resolved and result.rejection is None
        assert result.error is not None and result.error.startswith(f"not graded: integrity={integrity!r}")
    rejected = replace(grade, reward=0.0, resolved=False, rejection="a decoy passed")
    assert _paid(integrity, rejected) == rejected  # a rejection stays the agent's doing, whatever is paid


def test_the_default_is_protected() -> None:
    env = gymnasium.make("SWEGym-v0")
    try:
        assert env.unwrapped.integrity == "protected"  # type: ignore[attr-defined]
    finally:
        env.close()


def test_validate_reports_the_protected_share_per_repository() -> None:
    rows = [
        {"task_id": "pallets__flask-1", "ok": True, "integrity": "sealed", "chance": 0.0},
        {"task_id": "pallets__flask-2", "ok": True, "integrity": "decoys", "chance": 0.0156},
        {"task_id": "pallets__flask-3", "ok": True, "integrity": "unprotected", "chance": 0.25},
        {"task_id": "psf__requests-4", "ok": True, "integrity": "decoys", "chance": 0.01},
        {"task_id": "psf__requests-5", "ok": False, "integrity": "unprotected", "chance": 1.0},  # not valid
    ]
    lines = protection_summary(rows)
    assert "  pallets/flask: 2/3 (67%)" in lines and "  psf/requests: 1/1 (100%)" in lines
    assert "  all: 3/4 (75%)" in lines
    assert any("pallets__flask-3" in line and "unprotected" in line for line in lines)
    assert [protection(row) for row in rows[:3]] == ["sealed", "decoys 1.6%", "no 25.0%"]
