"""Custom rewards: a callable ``reward(grade, history) -> float`` passed as ``reward=`` replaces the
binary or fractional reward at the end of an episode. ``history`` is the episode's list of `Turn`s.

`diagnose_then_fix` is the worked example: it pays for passing tests, for diagnosing before editing (the
agent looked at the code and ran the tests before its first edit), and for finishing in few turns.

    env = gymnasium.make("CodeDebug-v0", reward=diagnose_then_fix(tests=0.7, diagnosis=0.2, efficiency=0.1))
"""

from __future__ import annotations

from collections.abc import Sequence

from gym_swe.envs.base import RewardFunction
from gym_swe.envs.turns import Turn
from gym_swe.errors import ConfigError
from gym_swe.grading.base import Grade
from gym_swe.tools import ToolCall

EDIT_COMMANDS = ("create", "str_replace", "insert")
WRITE_HINTS = (" > ", ">>", "sed -i", "tee ", "cat >", "open(", "write")


def _is_edit(call: ToolCall) -> bool:
    if call.name == "str_replace_editor":
        return call.arguments.get("command") in EDIT_COMMANDS
    if call.name == "bash":
        return any(hint in str(call.arguments.get("command", "")) for hint in WRITE_HINTS)
    return False


def _is_read(call: ToolCall) -> bool:
    if call.name == "str_replace_editor":
        return call.arguments.get("command") == "view"
    command = str(call.arguments.get("command", "")) if call.name == "bash" else ""
    return command.lstrip().startswith(("cat ", "head ", "less ", "sed -n", "nl ", "grep "))


def _ran_tests(call: ToolCall) -> bool:
    command = str(call.arguments.get("command", "")) if call.name == "bash" else ""
    return "test" in command and ("python" in command or "pytest" in command)


def diagnosis_score(history: Sequence[Turn]) -> float:
    """1.0 when, before its first edit, the agent both read the code and ran the tests; 0.5 for one."""
    read = ran = False
    for turn in history:
        for call in turn.calls:
            if _is_edit(call):
                return (read + ran) / 2
            read = read or _is_read(call)
            ran = ran or _ran_tests(call)
    return (read + ran) / 2


def diagnose_then_fix(
    tests: float = 0.7, diagnosis: float = 0.2, efficiency: float = 0.1, max_turns: int = 30
) -> RewardFunction:
    """A reward of ``tests * share of tests passed``, plus, only when the task is resolved,
    ``diagnosis * diagnosis_score`` and ``efficiency * (1 - turns / max_turns)``. A resolved task in one turn
    with full diagnosis scores ``tests + diagnosis + efficiency * (1 - 1/max_turns)``."""
    if min(tests, diagnosis, efficiency) < 0 or max_turns < 1:
        raise ConfigError("diagnose_then_fix: weights must be >= 0 and max_turns >= 1")

    def reward(grade: Grade, history: Sequence[Turn]) -> float:
        value = tests * grade.fraction
        if grade.resolved:
            value += diagnosis * diagnosis_score(history)
            value += efficiency * max(0.0, 1.0 - len(history) / max_turns)
        return value

    return reward
