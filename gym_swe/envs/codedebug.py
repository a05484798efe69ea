"""CodeDebug-v0: fix a buggy Python function (HumanEvalFix style)."""

from __future__ import annotations

import difflib
from dataclasses import replace
from typing import Any

from gym_swe.envs.base import ToolEnv, system_prompt
from gym_swe.errors import ConfigError, FileTooLargeError, SandboxCrashedError, SandboxError, unknown_name
from gym_swe.grading.base import Grade
from gym_swe.grading.functions import grade_function
from gym_swe.sandbox import Sandbox
from gym_swe.tasks.base import TaskSet
from gym_swe.tasks.functions import FunctionTask, load_function_tasks

WORKDIR = "/workspace"
SOLUTION = "solution.py"
TEST_FILE = "test_solution.py"
MAX_SOLUTION_BYTES = 1024 * 1024  # read into the host's memory: a function needs far less
SHOW_TESTS = ("example", "full", "none")

USER_PROMPT = """The function `{entry_point}` in {workdir}/{solution} has a bug: it does not do what its \
docstring says. Find the bug and fix it, changing as little as needed.
{tests}
Do not rename the function or change its signature. When the function is correct, call submit."""


class CodeDebugEnv(ToolEnv):
    """Fix a buggy Python function so that it passes hidden tests.

    ## Description
    Each episode is one task: a function in ``/workspace/solution.py`` whose body has one bug of the six
    HumanEvalFix kinds (missing logic, excess logic, value misuse, operator misuse, variable misuse,
    function misuse). The agent reads the code, runs it and the tests it is shown, edits the file, and calls
    ``submit``. It is graded by the task's full tests, which it never sees.

    ## Action Space
    Text (`CodeText`): the model's turn, holding one or more tool calls, or an OpenAI-format assistant message
    dict with ``tool_calls``. Tools (schemas in ``info["tools"]``): ``bash(command, timeout?)``,
    ``str_replace_editor(command=view|create|str_replace|insert|undo_edit, path, ...)``, ``submit()``.
    Accepted call formats: Hermes/Qwen ``<tool_call>{json}</tool_call>``, Qwen3-Coder
    ``<function=...><parameter=...>``, Llama 3 JSON and ``<|python_tag|>``, Mistral ``[TOOL_CALLS]``,
    ``<tool_code>name(k=v)</tool_code>``, gpt-oss harmony, DeepSeek, Kimi, and a fenced json block as the last
    resort (see `gym_swe.tools.parsing`). A malformed call is not an error: the observation says what was
    wrong and the episode goes on (``info["parse_errors"]``).

    ## Observation Space
    Text (`CodeText`). After ``reset``: the prompt (system instructions with the tool list, then the task).
    After ``step``: the output of each tool call (bounded, head and tail), and any call errors. Never the
    hidden tests, the grader's output or the reward.

    ## Rewards
    0 on every step but the last (minus ``format_penalty`` on a turn whose calls could not be parsed, when
    set). On the last step: 1.0 when every hidden test passes, else 0.0 (``reward="binary"``); the share of
    hidden tests passed (``reward="fraction"``, one test per assert of the check function); or
    ``reward(grade, history)`` for a callable (see `gym_swe.envs.rewards`).

    ## Starting State
    ``/workspace/solution.py``: the function with its docstring and the bug. With ``show_tests="example"``
    also ``/workspace/test_solution.py``: the docstring's examples as asserts (``"full"``: the full tests;
    ``"none"``: no test file).

    ## Episode End
    Terminated after ``submit``. Truncated at ``max_turns`` (30; ``gymnasium.make``'s ``max_episode_steps``
    sets the same limit, see `gym_swe.envs.limits`), when the chat outgrows ``max_context_chars``, or when
    the sandbox dies (``info["error"]`` says why). Either way the final ``solution.py`` is graded in a fresh
    sandbox and ``info["grade"]`` holds the per-test outcomes. A sandbox whose memory the agent's own
    commands used up (its executor taken by the OOM killer) is the agent's failure instead: terminated,
    scored 0, ``end_reason="out_of_memory"``, no ``info["error"]``. ``gymnasium.make("CodeDebug-v0",
    max_turns=N)`` gives N turns, graded at the end, with no TimeLimit cutting earlier; a
    ``max_episode_steps`` given with it must be the same N.

    ## Arguments
    - ``tasks``: ``"bundled"`` (48 original tasks, default), ``"humanevalpack"`` (164 tasks of
      bigcode/humanevalpack through ``datasets``), or a path to a .jsonl/.parquet file in that schema.
    - ``sandbox``: ``"local"`` (bubblewrap, default) or ``"docker"``; ``sandbox_options``: backend kwargs
      (``image=...`` for docker); ``limits``: a `gym_swe.sandbox.Limits`.
    - ``max_turns`` (30), ``reward`` (``"binary"``, ``"fraction"`` or a callable), ``format_penalty`` (0.0),
      ``max_observation_chars`` (16000), ``max_context_chars`` (400000), ``tools``, ``tool_options``.
    - ``max_tool_calls`` (32): tool calls run per action, the rest not run; ``max_step_seconds`` (600): wall
      time of one action's calls together, each command's timeout clipped to what is left (see
      `gym_swe.envs.step_bound`). A step either cut short says so in its observation and in
      ``info["step_limit"]`` (``"max_tool_calls"`` or ``"max_step_seconds"``); the episode goes on.
    - ``show_tests``: ``"example"`` (default), ``"full"`` or ``"none"``.
    - ``test_timeout``: seconds one hidden test may run (5; some buggy functions loop forever);
      ``grade_timeout``: seconds for all of them (60).

    ## Version History
    - v0: first version.
    """

    def __init__(
        self,
        show_tests: str = "example",
        test_timeout: float = 5.0,
        grade_timeout: float = 60.0,
        **kwargs: Any,
    ) -> None:
        if show_tests not in SHOW_TESTS:
            raise ConfigError(unknown_name("show_tests", show_tests, SHOW_TESTS))
        for name, value in (("test_timeout", test_timeout), ("grade_timeout", grade_timeout)):
            if not isinstance(value, (int, float)) or value <= 0:
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        self.show_tests = show_tests
        self.test_timeout = float(test_timeout)
        self.grade_timeout = float(grade_timeout)
        super().__init__(**kwargs)  # the kwargs every env takes (ToolEnv): tasks, sandbox, max_turns, ...

    def _load_tasks(self, source: str) -> TaskSet[FunctionTask]:
        if not isinstance(source, str):
            raise ConfigError(f"tasks must be a source name or a file path, got {type(source).__name__}")
        return load_function_tasks(source)

    def _sandbox_options(self, task: FunctionTask) -> dict[str, Any]:
        return {"workdir": WORKDIR}

    def _test_file(self, task: FunctionTask) -> str | None:
        tests = {"example": task.example_test, "full": task.test, "none": ""}[self.show_tests]
        if not tests.strip():
            return None
        return f"from solution import *  # noqa: F403\n\n\n{tests.rstrip()}\n\nprint('All tests passed.')\n"

    def starting_files(self, task_id: str) -> dict[str, str]:
        """The files ``reset`` writes into ``/workspace`` for ``task_id`` (name -> text), without starting an
        episode (an export writes them into an image of its own)."""
        task = self.tasks.get(task_id)
        files = {SOLUTION: task.buggy_code}
        test_file = self._test_file(task)
        if test_file is not None:
            files[TEST_FILE] = test_file
        return files

    def _prepare(self, task: FunctionTask, sandbox: Sandbox) -> None:
        for name, text in self.starting_files(task.task_id).items():
            sandbox.write_file(f"{WORKDIR}/{name}", text)

    def _prompt(self, task: FunctionTask) -> tuple[str, str]:
        if self._test_file(task) is None:
            tests = "\nThere are no tests in the workspace: check the function against its docstring.\n"
        else:
            kind = "the docstring's examples" if self.show_tests == "example" else "tests"
            tests = (
                f"\n{WORKDIR}/{TEST_FILE} holds {kind}; run them with `python {TEST_FILE}` "
                "(it prints 'All tests passed.' when they pass).\n"
            )
        user = USER_PROMPT.format(
            entry_point=task.entry_point, workdir=WORKDIR, solution=SOLUTION, tests=tests
        )
        return system_prompt(self.toolbox), user

    def _grade(self, task: FunctionTask, sandbox: Sandbox) -> Grade:
        try:
            code = sandbox.read_file(f"{WORKDIR}/{SOLUTION}", max_bytes=MAX_SOLUTION_BYTES)
        except FileTooLargeError:
            reason = f"{SOLUTION} is larger than {MAX_SOLUTION_BYTES // 1024} KiB"
            return Grade(tests=(), resolved=False, reward=0.0, rejection=reason)
        except SandboxCrashedError:
            raise
        except (OSError, SandboxError):
            # Deleted, made unreadable, or not a file at all (a FIFO, a link to a device): what the agent
            # left is graded as it stands, and every test fails on import.
            code = b""
        mode = self.reward_mode if isinstance(self.reward_mode, str) else "binary"
        with self.new_sandbox(task) as grader:
            grade = grade_function(
                grader,
                task,
                code,
                reward=mode,
                test_timeout=self.test_timeout,
                total_timeout=self.grade_timeout,
            )
        # Bytes that are not UTF-8 are graded as they are, and shown as escapes (the Grade notes it).
        changes = difflib.unified_diff(
            task.buggy_code.splitlines(keepends=True),
            code.decode("utf-8", "surrogateescape").splitlines(keepends=True),
            f"a/{SOLUTION}",
            f"b/{SOLUTION}",
        )
        return replace(grade, diff="".join(changes))
