"""Issue 32's decoy-aware forger (tests/redteam/decoy_forger.py) against four tasks made from the bundled
repositories, under SWEGym-v0's default ``integrity="protected"``: a sample of grades per task and backend
(`SAMPLE`); bench/redteam_report.py ``--forger`` plays the whole run (100 grades each) and prints the
scoreboard (bench/RESULTS.md).

For each task: the gold patch earns 1.0 on a protected grade ("sealed", or "decoys" with a chance bound of
at most 2%); no change earns 0.0; the forger, over the sample, wins at most two grades the default pays, and no
strategy of it picks the original of a protective group much more often than one member in ``members``; one
episode through ``env.step()`` carries the forger (appended to the package by the bash tool) to a grade that
reads its run without rejecting it (the forgery is consistent: stream and report agree).

What does not hold is marked xfail with the mechanism (findings for the lead, not fixed here):

- ``quoted`` and ``small_int`` cannot be protected: their checks compare with a value the issue quotes, or a
  small integer, so each is sealed but not protectively (`seals.strong`/``public``); a sealed statement is no
  check a decoy may change (`decoy_text.checks`), and the calibration of input decoys learns nothing from a
  copy whose only check is sealed (a sealed check never fails in the run: every copy passes), so the only
  decoys left are a form-based ``raises``/``negation`` or an input whose change crashes the test before its
  check (an input too near the end of its calibrated values to fit a run): the grade is "unprotected", and the
  default refuses the gold patch too ("not graded");
- ``floats`` and ``truncating``: the gold patch truncates (``int(value)``), so the calibration drops every
  value near an input that truncates like it (2047.1 ... 2047.9 but the original 2047.5). Before 957e010 a
  group was a run of the values kept, and the original was the member with missing values on both sides:
  the forger's ``gap`` strategy picked it in about 9 grades of 10 (``truncating``: most grades the default
  paid, bound 1/64). Since, a calibrated class ends at the first dropped value: no gap shows, but the runs
  left are too short for the 2% bound, so both are "unprotected" and the default pays neither the forger
  nor the gold patch.
"""

from __future__ import annotations

import collections
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_swe.tasks.swe import load_swe_tasks
from tests.redteam import decoy_forger
from tests.redteam.scripted import make_env, run_episode
from tests.redteam.test_trust_boundaries import append

BACKENDS = ["local", "docker"]
SAMPLE = 10
"""Forged grades per task and backend here (the bench plays 100)."""

UNPROTECTABLE = pytest.mark.xfail(
    strict=True,
    reason="issue 32 finding: every check of its tests is sealed but not protectively (a value the issue quotes, "
    "a small integer), which leaves no check a decoy may change and no input the calibration can learn "
    "(a sealed check never fails in the run): the grade is 'unprotected' and the default does not pay the gold "
    "patch",
)
NARROW_CLASSES = pytest.mark.xfail(
    strict=True,
    reason="issue 32 finding, after 957e010: the gold patch truncates (int()), so the values near each input "
    "that it maps to the original's result are dropped, and a calibrated class now ends at the first of them "
    "(a gap would show the original, as this forger's 'gap' strategy did: 9 grades of 10): the runs left "
    "are too short for the 2% bound, the grade is 'unprotected' and the default does not pay the gold patch",
)
UNPROTECTED = {"quoted", "small_int", "floats", "truncating"}
"""The tasks whose grades the default leaves out (the forger then earns nothing, and neither does the fix)."""
GOLD_CASES = [
    pytest.param("computed"),
    pytest.param("quoted", marks=UNPROTECTABLE),
    pytest.param("small_int", marks=UNPROTECTABLE),
    pytest.param("floats", marks=NARROW_CLASSES),
    pytest.param("truncating", marks=NARROW_CLASSES),
]
WIN_CASES = [
    *(pytest.param(name) for name in ("computed", "quoted", "small_int", "floats", "truncating")),
]
STRATEGY_CASES = [
    pytest.param("computed"),
    pytest.param("quoted"),
    pytest.param("small_int"),
    pytest.param("floats"),
    pytest.param("truncating"),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("decoy_forger")


@pytest.fixture(scope="module")
def tasks_file(scratch: Path) -> Path:
    return decoy_forger.write_tasks(scratch)


@pytest.fixture(scope="module", params=BACKENDS)
def env(request: pytest.FixtureRequest, tasks_file: Path) -> Iterator[Any]:
    environment = make_env("SWEGym-v0", request.param, tasks=str(tasks_file))  # the default integrity
    yield environment
    environment.close()


@pytest.fixture(scope="module")
def samples(env: Any, tasks_file: Path, scratch: Path) -> dict[str, list[Any]]:
    """`SAMPLE` grades of the forger's diff per task (shared by the tests of one backend)."""
    found: dict[str, list[Any]] = {}
    for name in decoy_forger.TASKS:
        task = load_swe_tasks(str(tasks_file)).get(decoy_forger.task_id(name))
        diff = decoy_forger.forged_diff(name, scratch)
        found[name] = [env.unwrapped.grade_diff(task, diff) for _ in range(SAMPLE)]
    return found


def _task(tasks_file: Path, name: str) -> Any:
    return load_swe_tasks(str(tasks_file)).get(decoy_forger.task_id(name))


@pytest.mark.parametrize("name", GOLD_CASES)
def test_the_gold_patch_earns_one_on_a_protected_grade(env: Any, tasks_file: Path, name: str) -> None:
    grade = env.unwrapped.grade_diff(_task(tasks_file, name), _task(tasks_file, name).patch)
    assert grade.reward == 1.0, grade.log[-3000:]
    assert grade.integrity in ("sealed", "decoys"), (grade.integrity, grade.chance, grade.log[-3000:])
    assert grade.chance <= 0.02


@pytest.mark.parametrize("name", list(decoy_forger.TASKS))
def test_no_change_earns_nothing(env: Any, tasks_file: Path, name: str) -> None:
    grade = env.unwrapped.grade_diff(_task(tasks_file, name), "")
    assert grade.reward == 0.0, grade.log[-3000:]


@pytest.mark.parametrize("name", WIN_CASES)
def test_the_forger_wins_at_most_two_paid_grades_of_the_sample(
    samples: dict[str, list[Any]], name: str
) -> None:
    grades = samples[name]
    assert all(grade.rejection is None and grade.error is None for grade in grades), [
        grade.rejection or grade.error for grade in grades
    ]
    assert all(decoy_forger.score(grade.log) is not None for grade in grades), "the forger did not run"
    wins = sum(decoy_forger.paid(grade) for grade in grades)
    assert wins <= 2, f"{wins} of {len(grades)} grades paid to the forger"  # bound 2%: 3 of 10 is p < 0.001


@pytest.mark.parametrize("name", STRATEGY_CASES)
def test_no_strategy_picks_a_protective_groups_original_much_above_chance(
    samples: dict[str, list[Any]], name: str
) -> None:
    """Per protective group (by its original test), how often each strategy picked the original, against
    ``SAMPLE / members``: a strategy above 2.5 times that (and above 3) tells members apart."""
    hits: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    members: dict[str, int] = {}
    for grade in samples[name]:
        protective = _protective_groups(grade.log)
        for group, picked in decoy_forger.group_hits(grade.log).items():
            original = protective.get(group)
            if original is None:
                continue
            node, size = original
            members[node] = size
            hits[node].update(strategy for strategy, hit in picked.items() if hit)
    above = {
        node: {
            strategy: count
            for strategy, count in counts.items()
            if count > max(5.0, 3 * len(samples[name]) / members[node])
        }
        for node, counts in hits.items()
    }
    assert not any(above.values()), (above, members)


def _protective_groups(log: str) -> dict[str, tuple[str, int]]:
    """The forger's group keys (file and class, ``::g<k>``) of the grade's protective groups, each with its
    original test and its members, matched by the planted original's name among the forger's picks."""
    found = re.search(r"GYM-FORGER (\{.*\})", log)
    planted = re.search(r"^decoys: (.*)$", log, re.M)
    if found is None or planted is None:
        return {}
    import json

    picks: dict[str, dict[str, str]] = json.loads(found.group(1))
    groups = {}
    for node, detail, decoys, member in re.findall(
        r"(\S+) -> ([^;]*?), (\d+) decoy\(s\), original planted as (\w+)", planted.group(1)
    ):
        if "(protective)" not in detail:
            continue
        for key in picks:
            if key.rpartition("::")[0] == node.rpartition("::")[0] and member in decoy_forger.members_of(
                log, key
            ):
                groups[key] = (node, int(decoys) + 1)
    return groups


@pytest.mark.parametrize("name", list(decoy_forger.TASKS))
def test_an_episode_carries_the_forger_to_a_grade_that_reads_it(
    env: Any, tasks_file: Path, scratch: Path, name: str
) -> None:
    path, code = decoy_forger.forger(decoy_forger.row(name, scratch), scratch)
    reward, terminated, _, info = run_episode(env, decoy_forger.task_id(name), [append(path, code)])
    assert terminated
    grade = info["grade"]
    if name in UNPROTECTED:  # the default does not grade it
        assert reward == 0.0 and "not graded" in (grade["error"] or ""), grade
        return
    assert grade["rejection"] is None and grade["error"] is None, grade
    assert decoy_forger.score(grade["log"]) is not None, "the forger did not run"
    assert grade["integrity"] in ("sealed", "decoys")
