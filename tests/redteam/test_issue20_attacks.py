"""Attacks on the repository grader after issue 20's sealed checks (32c98ed, 2adaed0), written by someone who
read every line of it, and kept as tests after the fixes that followed (protective seals: a sealed literal the
agent can read is no secret). Each runs through ``env.step()`` as an agent would, on both backends, on bundled
tasks and on one task made here from the bundled semverkit repository (semverkit-2's base commit, environment and image)
whose FAIL_TO_PASS tests are exception blocks, the one form no bundled task has.

Held (plain tests, each with a counterfactual or a control showing the attack is real):
- a raised exception whose class claims every likely ancestor (a metaclass whose ``mro()`` lists them, its own
  ``__qualname__``/``__module__`` rewritten): 1.0 with sealing off, 0 sealed;
- an ``in`` check's value stuffed with every phrase of the repository, as one string or a list: it holds the
  ``in`` check (which is why ``in`` is not strong), and the task's secret check fails it;
- a literal searched for in everything the run can read (the checkout, its git objects, /tmp, the grader's
  directory): the test patch is nowhere, so the sealed value cannot be found;
- the values the issue and the README state, written as records beside a forged report, with every decoy told
  (semverkit-2, semverkit-3, tabletext-4): 0. Broken when written (every literal of those tasks' sealed checks
  was public, and they earned 1.0); each bundled task now has a FAIL_TO_PASS check whose literal is written
  nowhere the agent reads, which the forger cannot fill in.

Broken when written, and what answers each now:
- the values a task's sealed checks expect are public (the issue, the README, a test the agent saw): a report
  forged to "passed" and records written with those values earned 1.0 while the bug stayed, on three bundled
  tasks. Now a check protects only if its literal is nowhere the agent reads (`seals.protective`), and every
  bundled task has one (its secret check, which the forger cannot fill in): 0 even with every decoy told. A
  task with none is graded "decoys", which ``integrity="sealed"`` does not pay. With ``reward="fraction"``, the
  same forgery raises the share of a task whose literals are partly public (inikit-2: 0.769 unfixed, 0.923
  forged): fraction pays test by test, so ``integrity="sealed"`` takes binary rewards only;
- the same ``in`` check stuffed with a *list* of the phrases: ``in`` is no longer strong (a stuffed value meets
  it), so what stands is the task's secret check;
- raising the exception the issue names, only inside ``raises`` blocks (found from the caller's frame): an
  exception block is no longer strong, the grade is "decoys", which ``integrity="sealed"`` does not pay;
- four correct fixes refused: more text on stderr than the ``in`` check's bound, the project's own
  ``ValueError`` subclass where the gold patch raises ``ValueError``, a longer message, the expression in an
  exception note (which pytest 8's ``match=`` reads). No bound on ``in`` or on messages now, only builtin
  ancestors are bounded, notes are read: each earns 1.0.
"""

from __future__ import annotations

import difflib
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from gym_swe.grading import decoys, seals
from gym_swe.tasks.swe import bundled_data_dir, load_swe_tasks
from tests.redteam.scripted import SUBMIT, bash, make_env, write
from tests.redteam.sealed_programs import (
    ANSWER_BOOK,
    EVERY_ANCESTOR,
    HARVEST,
    INIKIT2_ANSWERS,
    ISSUES_EXCEPTION,
    MAIN_WITH_A_HINT,
    PUBLIC_ANSWERS,
    RAISES_KEY,
    SHAPES,
    STILL_BROKEN,
    STUFFED_STDERR,
)
from tests.redteam.test_trust_boundaries import append

BACKENDS = ["local", "docker"]
BUNDLED = load_swe_tasks("bundled")
INVERTED = "gymswe__semverkit-inverted"
"""The task made here: an inverted hyphen range must raise a ValueError naming it."""


class GraderPaid(AssertionError):
    """An attack earned a reward: the grader is broken (an xfail's expected failure)."""


class GraderRefused(AssertionError):
    """A correct fix earned less than 1.0: the grader is broken the other way."""


# -- the tasks ---------------------------------------------------------------------------------------------------


def _bundled_row(instance_id: str) -> dict[str, Any]:
    for line in (bundled_data_dir() / "tasks.jsonl").read_text().splitlines():
        row: dict[str, Any] = json.loads(line)
        if row["instance_id"] == instance_id:
            return row
    raise KeyError(instance_id)


def _diff(path: str, old: str, new: str) -> str:
    return "".join(difflib.unified_diff(old.splitlines(True), new.splitlines(True), f"a/{path}", f"b/{path}"))


RANGE_PY = "semverkit/range.py"
TEST_RANGE_PY = "tests/test_range.py"
HYPHEN_ANCHOR = "    low, high = _parse_partial(low_text, expr), _parse_partial(high_text, expr)\n"
INVERTED_TESTS = """

def test_inverted_hyphen_range_is_rejected():
    with pytest.raises(ValueError):
        Range("2.0.0 - 1.0.0")


def test_inverted_hyphen_range_error_names_it():
    with pytest.raises(ValueError, match="2.0.0 - 1.0.0"):
        Range("2.0.0 - 1.0.0")
"""
INVERTED_CHECK = "    if low.major is not None and high.major is not None and low.floor() > high.floor():\n"
FIXES = {
    "gold": '        raise ValueError("inverted range %r" % expr)\n',
    # semverkit's own errors derive from SemverError, "itself a ValueError, so code that only cares about bad
    # input can catch ValueError" (semverkit/errors.py): the idiomatic fix.
    "the project's own ValueError subclass": (
        '        raise InvalidRange(expr, "the lower bound is above the upper one")\n'
    ),
    "a longer message": (
        '        raise ValueError("%r: the lower bound %s is above the upper bound %s, so no version can satisfy '
        'it; write the lower bound first, as in %r" % (expr, low_text, high_text, high_text + " - " + low_text))\n'
    ),
    # Python 3.11's exception notes; pytest 8 matches `match=` against the message and the notes.
    "the expression in a note": (
        '        error = ValueError("inverted hyphen range")\n'
        '        error.add_note("in %r" % expr)\n'
        "        raise error\n"
    ),
}


@pytest.fixture(scope="module")
def semverkit(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """semverkit's range.py and its tests as semverkit-2's base commit has them (from the bundle)."""
    clone = tmp_path_factory.mktemp("semverkit") / "repo.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(bundled_data_dir() / "semverkit.bundle"), str(clone)],
                   check=True)  # fmt: skip
    commit = BUNDLED.get("gymswe__semverkit-2").base_commit
    return {
        path: subprocess.run(
            ["git", "-C", str(clone), "show", f"{commit}:{path}"], capture_output=True, text=True, check=True
        ).stdout
        for path in (RANGE_PY, TEST_RANGE_PY)
    }


def range_with(semverkit: dict[str, str], fix: str) -> str:
    """semverkit/range.py with the inverted range rejected by ``FIXES[fix]``."""
    assert HYPHEN_ANCHOR in semverkit[RANGE_PY]
    return semverkit[RANGE_PY].replace(HYPHEN_ANCHOR, HYPHEN_ANCHOR + INVERTED_CHECK + FIXES[fix])


@pytest.fixture(scope="module")
def inverted(semverkit: dict[str, str]) -> dict[str, Any]:
    """The task made here, as a record: semverkit-2's base commit, environment and image, and checks that are
    exception blocks (its gold patch raises ValueError, as its issue asks)."""
    base = _bundled_row("gymswe__semverkit-2")
    tests = semverkit[TEST_RANGE_PY]
    return {
        **base,
        "instance_id": INVERTED,
        "problem_statement": (
            'An inverted hyphen range such as `Range("2.0.0 - 1.0.0")` is accepted and matches nothing: it '
            "should be rejected with a ValueError that names the expression."
        ),
        "hints_text": "",
        "patch": _diff(RANGE_PY, semverkit[RANGE_PY], range_with(semverkit, "gold")),
        "test_patch": _diff(TEST_RANGE_PY, tests, tests + INVERTED_TESTS),
        "FAIL_TO_PASS": [
            f"{TEST_RANGE_PY}::test_inverted_hyphen_range_is_rejected",
            f"{TEST_RANGE_PY}::test_inverted_hyphen_range_error_names_it",
        ],
        "PASS_TO_PASS": base["PASS_TO_PASS"],
        "image": "gym-swe-task:gymswe__semverkit-2",
    }


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory, inverted: dict[str, Any]) -> Path:
    path = tmp_path_factory.mktemp("issue20") / "tasks.jsonl"
    names = ("gymswe__semverkit-2", "gymswe__semverkit-3", "gymswe__tabletext-4", "gymswe__inikit-2")
    rows = [_bundled_row(name) for name in names]
    path.write_text("".join(json.dumps(row) + "\n" for row in [*rows, inverted]))
    return path


@pytest.fixture(scope="module", params=BACKENDS)
def env(request: pytest.FixtureRequest, tasks_file: Path) -> Iterator[Any]:
    # integrity="any": these attacks (and their controls) are on what each mechanism holds, whatever the
    # default would pay; test_the_default_pays_no_unprotected_grade shows what it leaves out.
    environment = make_env("SWEGym-v0", request.param, tasks=str(tasks_file), integrity="any")
    yield environment
    environment.close()


def play(env: Any, task_id: str, actions: list[str]) -> tuple[float, dict[str, Any], str]:
    """Reset on ``task_id``, play ``actions`` then submit: the reward, the last info, every observation."""
    observation, _ = env.reset(options={"task_id": task_id})
    seen = []
    for action in [*actions, SUBMIT]:
        observation, reward, terminated, truncated, info = env.step(action)
        seen.append(str(observation))
        if terminated or truncated:
            assert "error" not in info and not info["grade"]["error"], info
            return float(reward), info, "\n".join(seen)
    raise AssertionError("the episode did not end")


def play_ungraded(env: Any, task_id: str, actions: list[str]) -> tuple[float, dict[str, Any], str]:
    """`play`, for an env whose grade may be an error (integrity="sealed" leaving a "decoys" grade out)."""
    env.reset(options={"task_id": task_id})
    seen = []
    for action in [*actions, SUBMIT]:
        observation, reward, terminated, truncated, info = env.step(action)
        seen.append(str(observation))
        if terminated or truncated:
            return float(reward), info, "\n".join(seen)
    raise AssertionError("the episode did not end")


def honest_fix(task_id: str, inverted: dict[str, Any]) -> list[str]:
    patch = inverted["patch"] if task_id == INVERTED else BUNDLED.get(task_id).patch
    return [write("/tmp/fix.diff", patch), bash("cd /testbed && git apply /tmp/fix.diff && echo applied")]


@pytest.mark.parametrize(
    "task_id", ["gymswe__semverkit-2", "gymswe__semverkit-3", "gymswe__tabletext-4", INVERTED]
)
def test_control_the_honest_fix_earns_one(env: Any, task_id: str, inverted: dict[str, Any]) -> None:
    reward, info, _ = play(env, task_id, honest_fix(task_id, inverted))
    assert reward == 1.0 and info["grade"]["integrity"] in ("sealed", "decoys", "unprotected"), info["grade"]


def test_the_default_pays_no_unprotected_grade(tasks_file: Path, inverted: dict[str, Any]) -> None:
    """Under the default (integrity="protected") a grade that neither a protective sealed check nor decoys
    within the 2% chance bound stand behind is not graded: an error, which trainers leave out. The inverted
    task's FAIL_TO_PASS checks are exception blocks: no literal of theirs to vary, no value to seal."""
    env = make_env("SWEGym-v0", "local", tasks=str(tasks_file))
    try:
        reward, info, _ = play_ungraded(env, INVERTED, honest_fix(INVERTED, inverted))
        grade = info["grade"]
        if grade["integrity"] == "unprotected":  # its checks are exception blocks: nothing protects them
            assert reward == 0.0 and grade["error"].startswith("not graded: integrity='protected'"), grade
        else:
            assert reward == 1.0 and grade["chance"] <= 0.02, grade
    finally:
        env.close()


# -- 1. public answers: a forged report, and records with the values the issue states ---------------------------

# ANSWER_BOOK (sealed_programs): in the run, through the driver's stream object, every test streamed as passed
# and a record for each sealed check of the test files with the value PUBLIC_ANSWERS[task] gives for its
# expression (the buggy code's own records dropped); at exit, the report made to agree; STILL_BROKEN shows the bug.


def _attack(task_id: str, code: str) -> list[str]:
    """Turns that add ``code`` to the package the tests import, then show the bug in the same sandbox."""
    command, _ = STILL_BROKEN[task_id]
    package = task_id.split("__")[1].rsplit("-", 1)[0]
    return [append(f"/testbed/{package}/__init__.py", code), bash(command)]


def _assert_still_broken(task_id: str, observations: str) -> None:
    _, shown = STILL_BROKEN[task_id]
    assert shown in observations, observations[-2000:]


# Broken when written: every literal these tasks' sealed checks expected was in the issue or the README, and
# the records are the run's to write, the report too. Each task now has a FAIL_TO_PASS check whose literal is
# written nowhere the agent reads (SECRET_CHECKS: its line in the test file, and what the forger's records make
# of it); it stands with the decoys turned off, as if the forger told every one.
SECRET_CHECKS = {
    "gymswe__semverkit-2": (29, "recorded nothing"),  # str(Range("^0.0.19")): the forger has no value for it
    "gymswe__semverkit-3": (30, "did not hold"),  # `bump 2.17.9 minor`'s stdout: "1.5.0" is written
    "gymswe__tabletext-4": (69, "did not hold"),  # a second table: the issue's four lines are written
}


@pytest.mark.parametrize("task_id", list(PUBLIC_ANSWERS))
def test_public_answers_written_as_records_earn_nothing(
    env: Any, task_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(decoys, "MAX_GROUPS", 0)  # the forger told every decoy
    reward, info, seen = play(env, task_id, _attack(task_id, ANSWER_BOOK + PUBLIC_ANSWERS[task_id]))
    _assert_still_broken(task_id, seen)
    if reward != 0.0:
        raise GraderPaid(f"{task_id}: {reward} for public answers, the bug intact")
    line, what = SECRET_CHECKS[task_id]
    assert f"sealed check at line {line} {what}" in info["grade"]["log"], info["grade"]["log"][-3000:]


# -- 2. an `in` check stuffed with the repository's phrases --------------------------------------------------------

# semverkit-3's `"not a valid semantic version" in proc.stderr`: its gold stderr has 54 characters, so the bound
# is 2 * 54 + 64 characters (a string) or 2 * 54 + 8 items (a container). STUFFED_STDERR records every phrase of
# the package's source there (the attacker need not know which is the literal); the other checks, public answers.


@pytest.mark.parametrize(
    "shape",
    [
        "joined",
        # Broke the grader when written: a size bound took a list's items against the gold's characters. An
        # `in` check is no longer strong (a stuffed value meets it, as one string or many), so its test keeps
        # its decoys, which catch the report forged to "passed".
        "listed",
    ],
)
def test_an_in_check_stuffed_with_every_phrase_earns_nothing(env: Any, shape: str) -> None:
    task_id = "gymswe__semverkit-3"
    code = ANSWER_BOOK + PUBLIC_ANSWERS[task_id] + STUFFED_STDERR.replace("SHAPE", SHAPES[shape])
    reward, _, seen = play(env, task_id, _attack(task_id, code))
    _assert_still_broken(task_id, seen)
    if reward != 0.0:
        raise GraderPaid(f"{reward} for a stuffed {shape} value")


# -- 3. exception blocks: the exception the issue names, raised where a test expects one ---------------------------

# RAISES_KEY: Range() raises when a test calls it from inside a `with ...raises...:` block (the caller's frame and
# its file tell), and accepts the inverted range anywhere else; ISSUES_EXCEPTION makes that the ValueError the
# issue asks for, EVERY_ANCESTOR an exception whose class claims every likely ancestor.


# Broke the grader when written: an exception block counted as a strong seal, though the exception it hides
# (ValueError) is the issue's own words; a key that raises it only where a test expects an exception earned 1.0
# with the bug intact, graded "sealed". Exception blocks are not strong now (the likely exceptions are few, and
# name themselves): the grade is "decoys", and integrity="sealed" does not pay it. (With integrity="any" it is
# the documented limit of a decoys-only grade: no decoy of this test sees the key, which answers the tests.)
def test_raising_the_issues_exception_only_inside_raises_blocks_is_not_paid_as_sealed(
    tasks_file: Path,
) -> None:
    env = make_env("SWEGym-v0", "local", tasks=str(tasks_file), integrity="sealed")
    try:
        reward, info, seen = play_ungraded(env, INVERTED, _attack(INVERTED, ISSUES_EXCEPTION + RAISES_KEY))
    finally:
        env.close()
    _assert_still_broken(INVERTED, seen)
    assert reward == 0.0 and info["grade"]["error"].startswith("not graded: integrity='sealed'"), info[
        "grade"
    ]


def test_an_exception_of_every_likely_class_earns_nothing(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    attack = _attack(INVERTED, EVERY_ANCESTOR + RAISES_KEY)
    reward, info, seen = play(env, INVERTED, attack)
    _assert_still_broken(INVERTED, seen)
    assert reward == 0.0, info["grade"]
    assert "sealed check at line 100 did not hold" in info["grade"]["log"], info["grade"]["log"][-3000:]
    # the counterfactual: decoys alone, paid whatever they are
    monkeypatch.setattr(seals, "SEAL_CHECKS", False)
    monkeypatch.setattr(env.unwrapped, "integrity", "any")
    reward, info, _ = play(env, INVERTED, attack)
    assert reward == 1.0 and info["grade"]["integrity"] in ("decoys", "unprotected"), info["grade"]


# -- 4. correct fixes the sealed checks refuse --------------------------------------------------------------------

CORRECT_FIXES = {
    "semverkit-3: more on stderr than the gold patch": ("gymswe__semverkit-3", "", 39),
    "inverted: the project's own ValueError subclass": (
        INVERTED,
        "the project's own ValueError subclass",
        100,
    ),
    "inverted: a longer message": (INVERTED, "a longer message", 105),
    "inverted: the expression in a note": (INVERTED, "the expression in a note", 105),
}
"""Each case: the task, the fix (a key of FIXES, or "" for MAIN_WITH_A_HINT), the sealed check that refuses it."""


# Broke the grader when written: what calibration learned from the gold patch bounded what a correct fix may
# do: an `in` check's value within 2 * gold + 64 characters, a raised exception's ancestors among the gold's and
# the expected class's (semverkit.errors.SemverError is neither), its message within 2 * gold + 64 characters;
# and the message was `str(exception)`, where pytest 8's `match=` also reads the exception's notes (local:
# pytest 8.3.5). Now: no bound on `in` values or messages, only builtin ancestors bounded, notes read.
@pytest.mark.parametrize("case", list(CORRECT_FIXES))
def test_a_correct_fix_is_not_refused(
    env: Any, case: str, semverkit: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    task_id, name, line = CORRECT_FIXES[case]
    if "note" in name and env.unwrapped.sandbox_backend == "docker":
        pytest.skip("the image's pytest 7.2.1 matches `match=` against the message alone, as the grader does")
    if name:
        fix = [write(f"/testbed/{RANGE_PY}", range_with(semverkit, name))]
    else:
        fix = [write("/testbed/semverkit/__main__.py", MAIN_WITH_A_HINT)]
    with monkeypatch.context() as unsealed:  # the control: the fix passes every test as pytest runs them
        unsealed.setattr(seals, "SEAL_CHECKS", False)
        unsealed.setattr(env.unwrapped, "integrity", "any")  # paid whatever protects it
        reward, info, _ = play(env, task_id, fix)
        assert reward == 1.0, info["grade"]
    reward, info, _ = play(env, task_id, fix)
    if reward != 1.0:
        log = info["grade"]["log"]
        assert f"sealed check at line {line} did not hold" in log, log[-3000:]
        raise GraderRefused(f"{case}: {reward}")


# -- 5. a sealed literal looked for in everything the run can read ------------------------------------------------

# HARVEST: inikit-2's "/srv/worker/log/worker.log" (in neither the issue nor the repository) looked for at exit in
# every file the run can read, git objects too, then written as its record beside the issue's values.


def test_a_sealed_literal_is_nowhere_the_run_can_read(env: Any) -> None:
    code = ANSWER_BOOK.replace("import atexit as _atexit", HARVEST + "\nimport atexit as _atexit")
    reward, info, _ = play(env, "gymswe__inikit-2", [append("/testbed/inikit/__init__.py", code)])
    assert "gym-harvest: found []" in info["grade"]["log"], info["grade"]["log"][-3000:]
    assert reward == 0.0, info["grade"]
    assert "sealed check at line 81 recorded nothing" in info["grade"]["log"], info["grade"]["log"][-3000:]


# -- 6. reward="fraction": a seal guards its own test only ----------------------------------------------------------

# INIKIT2_ANSWERS: the public answer-book forgery on inikit-2, whose one secret literal still fails its test.


# Broke the grader when written, and stays the documented limit of fraction rewards (README, Security): in
# fraction mode a test whose sealed checks held counts whatever the rest of the grade showed; the forged report
# is caught for the one test whose literal is secret (the grade is not 1.0), and the grade goes on. Hence
# integrity="sealed" takes binary rewards only.
@pytest.mark.parametrize("backend", BACKENDS)
def test_a_forged_report_earns_no_full_fraction_reward(backend: str, tasks_file: Path) -> None:
    env = make_env("SWEGym-v0", backend, tasks=str(tasks_file), reward="fraction")
    try:
        unfixed, info, _ = play(env, "gymswe__inikit-2", [bash("true")])
        assert 0.0 < unfixed < 1.0 and not info["grade"]["rejection"], info["grade"]
        attack = [append("/testbed/inikit/__init__.py", ANSWER_BOOK + INIKIT2_ANSWERS)]
        forged, info, _ = play(env, "gymswe__inikit-2", attack)
    finally:
        env.close()
    assert "reported passed, but" in info["grade"]["log"], info["grade"]["log"][-3000:]
    if forged == 1.0:
        raise GraderPaid(f"the forgery's share {forged:.3f}")


def test_integrity_sealed_takes_binary_rewards_only() -> None:
    from gym_swe.errors import ConfigError

    with pytest.raises(ConfigError, match="integrity='sealed' needs reward='binary'"):
        make_env("SWEGym-v0", "local", integrity="sealed", reward="fraction")
