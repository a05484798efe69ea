"""What grading produces: per-test outcomes and the reward they earn.

A `Grade` is made on the host side from a structured report of a test run in a fresh sandbox. It goes into
``info["grade"]`` for the trainer and the logs, and is never shown to the agent.

Everything a Grade holds is valid text, whatever the agent wrote: bytes that are not UTF-8 (a diff of a file
holding them, a message its code raised) arrive as lone surrogates, which no UTF-8 file can hold, so the
Grade writes each as an escape (``\xff``, ``\ud800``) and its log says so. A trajectory carrying it can then
always be saved.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from gym_swe.errors import ConfigError, unknown_name

OUTCOMES = ("passed", "failed", "error", "timeout", "skipped", "not_run")
REWARD_MODES = ("binary", "fraction")
_SURROGATE = re.compile("[\ud800-\udfff]")
ESCAPED_NOTE = "note: bytes that are not UTF-8 in the {what} are written as escapes (\\xNN)"


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF is how Python holds an undecodable byte (surrogateescape): show the byte itself.
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def valid_text(text: str) -> str:
    """``text`` as valid Unicode, which UTF-8 can encode: each lone surrogate written as an escape."""
    return text if _SURROGATE.search(text) is None else _SURROGATE.sub(_escape, text)


@dataclass(frozen=True)
class TestResult:
    """One test's outcome. Only ``passed`` passes: a skipped test or one that never ran does not."""

    name: str
    outcome: str
    message: str = ""

    @property
    def passed(self) -> bool:
        return self.outcome == "passed"


@dataclass(frozen=True)
class Grade:
    """The outcome of grading one episode's final state."""

    tests: tuple[TestResult, ...]
    """Every graded test with its outcome."""
    resolved: bool
    """True when every test that must pass passed."""
    reward: float
    """The reward the grade earns under the env's reward mode."""
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    """Named lists of test names (SWE tasks: ``FAIL_TO_PASS``, ``PASS_TO_PASS``)."""
    error: str | None = None
    """Why the grader could not do its job (a sandbox that would not start, a task whose own tests do not
    apply); None when it did. Not the agent's doing: a trainer may leave such an episode out."""
    rejection: str | None = None
    """Why the submission was rejected without a test verdict it could be trusted for (its code broke the
    test run or its reporting, its diff does not apply, its solution file is too large): the agent's doing,
    so the reward is 0 as for any failure, and this is never an ``error``."""
    log: str = ""
    """The test run's own output, for people and trainers; never shown to the agent."""
    diff: str = ""
    """What the agent changed, as graded: the repository diff that was applied (SWE), or the solution's diff
    against the buggy function (CodeDebug). For people reading episodes (`gym-swe view`)."""
    duration: float = 0.0
    integrity: str = ""
    """What stood between a forged test report and this grade (repository tasks; ``""`` elsewhere):
    ``"sealed"``, a FAIL_TO_PASS check held outside the test run against an expectation the run never had,
    which no report or record the run writes meets without the value computed right; ``"decoys"``, decoy
    groups (copies of the task's tests with one value changed) whose members nothing tells apart, so that
    code which forges the report passes them all with a chance of at most ``chance`` (<= 2%);
    ``"unprotected"``, neither (see the README's Security section)."""
    chance: float | None = None
    """The chance bound of the grade (repository tasks): the probability that a forger who cannot compute
    the fix, but has read gym_swe and the test files, earns the reward (0 for "sealed")."""

    def __post_init__(self) -> None:
        escaped = []
        for name in ("diff", "log", "error", "rejection"):
            value = getattr(self, name)
            if isinstance(value, str) and _SURROGATE.search(value) is not None:
                object.__setattr__(self, name, valid_text(value))
                escaped.append(name)
        tests = tuple(
            replace(test, name=valid_text(test.name), message=valid_text(test.message))
            if _SURROGATE.search(test.name + test.message) is not None
            else test
            for test in self.tests
        )
        if any(new is not old for new, old in zip(tests, self.tests)):
            object.__setattr__(self, "tests", tests)
            escaped.append("test messages")
        if self.groups and any(_SURROGATE.search(n) for names in self.groups.values() for n in names):
            groups = {
                valid_text(key): tuple(valid_text(n) for n in names) for key, names in self.groups.items()
            }
            object.__setattr__(self, "groups", groups)
            escaped.append("test groups")
        notes = [ESCAPED_NOTE.format(what=what) for what in escaped if what != "log"]
        notes = [note for note in notes if note not in self.log]
        if notes:
            object.__setattr__(self, "log", "\n".join([self.log, *notes]) if self.log else "\n".join(notes))

    @property
    def passed(self) -> int:
        return sum(test.passed for test in self.tests)

    @property
    def total(self) -> int:
        return len(self.tests)

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.tests else 0.0

    def outcome(self, name: str) -> str:
        for test in self.tests:
            if test.name == name:
                return test.outcome
        return "not_run"

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)  # JSON-native: lists, not tuples, so the dict survives a JSON round trip
        data["tests"] = list(data["tests"])
        data["groups"] = {key: list(value) for key, value in self.groups.items()}
        data["passed"], data["total"] = self.passed, self.total
        return data


def check_reward_mode(reward: object) -> None:
    """``reward=`` is "binary", "fraction", or a callable ``(grade, history) -> float``."""
    if callable(reward):
        return
    if reward not in REWARD_MODES:
        raise ConfigError(
            unknown_name("reward", reward, REWARD_MODES) + " A callable (grade, history) -> float also works."
        )


def reward_for(resolved: bool, tests: Sequence[TestResult], mode: str) -> float:
    """1.0 or 0.0 by ``resolved`` ("binary"), or the share of tests passed ("fraction")."""
    if mode == "fraction":
        return sum(test.passed for test in tests) / len(tests) if tests else 0.0
    return 1.0 if resolved else 0.0
