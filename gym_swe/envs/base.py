"""ToolEnv: the multi-turn tool-calling loop every gym_swe env shares.

An episode: ``reset`` picks a task, builds a fresh sandbox and returns the prompt. Each ``step`` takes the
model's turn (raw text holding tool calls, or an OpenAI-style assistant message with ``tool_calls``), runs
the calls in order in the sandbox, within the step's bound (at most ``max_tool_calls`` calls, taking at most
``max_step_seconds`` together: `gym_swe.envs.step_bound`), and returns what they printed. It ends
``terminated`` after ``submit``, ``truncated`` at the turn limit, the context budget, or when the sandbox
dies; either way the final state is graded in a fresh sandbox by the subclass, and the reward comes from that
grade.

A sandbox that dies of the agent's own resource use (its executor taken by the OOM killer of the sandbox's
own memory limit) is the agent's failure, not an infrastructure error: the episode ends ``terminated``,
scored 0 with the reason (``end_reason="out_of_memory"``, ``info["grade"]["rejection"]``) and no
``info["error"]``, so a trainer cannot leave it out of the loss as it leaves out the sandbox's own failures.

Besides Gymnasium's API, an env has what a rollout needs to play it (the members that
`gym_swe.rollout.episode_env.EpisodeEnv` writes down): `ToolEnv.truncate` ends an episode from outside,
``messages`` is the chat so far, `ToolEnv.done` says whether an episode is running. Code outside this package
uses these, never the env's private state.

Subclasses say what a task is and how it is set up, prompted and graded (`_load_tasks`, `_sandbox_options`,
`_prepare`, `_prompt`, `_grade`); everything else lives here, but for what a turn is and how it is told to the
agent and written into the chat (`gym_swe.envs.turns`).
"""

from __future__ import annotations

import inspect
import json
import time
import warnings
from abc import abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import gymnasium

from gym_swe.envs.spaces import CodeText
from gym_swe.envs.step_bound import (
    DEFAULT_MAX_STEP_SECONDS,
    DEFAULT_MAX_TOOL_CALLS,
    BoundedSandbox,
    StepClock,
    check_step_bounds,
)
from gym_swe.envs.turns import Turn, TurnWriter, parse_action, render_turn, safe_repr
from gym_swe.errors import ConfigError, GymSweError, SandboxError, SandboxExhaustedError, unknown_name
from gym_swe.grading.base import Grade, check_reward_mode
from gym_swe.grading.changes import SubmissionRejected
from gym_swe.sandbox import BACKENDS, Limits, Sandbox, check_limits, make_sandbox
from gym_swe.tasks.base import TaskSet
from gym_swe.tools import DEFAULT_TOOLS, ParsedCalls, ToolBox, make_toolbox

RewardFunction = Callable[[Grade, Sequence["Turn"]], float]

SYSTEM_PROMPT = """You are a careful software engineer working in a sandboxed Linux shell. You act only \
through tool calls, one or more per message; their results come back in the next message.

Tools:
{tools}

Use your usual tool-call format. If you have none, write each call as
<tool_call>{{"name": "bash", "arguments": {{"command": "ls"}}}}</tool_call>
There is no network. When you are done, call submit; your work is then graded by tests you cannot see."""


def system_prompt(toolbox: ToolBox) -> str:
    """The opening system message: how to act, and the tools with the first line of their descriptions."""
    tools = "\n".join(
        f"- {schema['function']['name']}: {schema['function']['description'].splitlines()[0]}"
        for schema in toolbox.schemas()
    )
    return SYSTEM_PROMPT.format(tools=tools)


MAX_TEXT = 4_000_000  # longest observation or action the spaces admit


RESET_OPTIONS = ("task_id", "sandbox_options")
"""What ``reset(options=...)`` takes: ``task_id`` picks the task; ``sandbox_options``, backend kwargs for this
episode's sandbox only (the agent's: the fresh sandboxes grading makes do not get them), merged over the
env's own as `ToolEnv.new_sandbox` merges them. A harness that runs inside the sandbox binds its installed
files and the proxy's socket this way (`gym_swe.integrations.harnesses`)."""
MERGED_OPTIONS = ("ro_binds", "env")
"""Sandbox options that are mappings merged key by key across layers (task, env, episode), not replaced."""


def merged_sandbox_options(base: Mapping[str, Any], layer: Mapping[str, Any]) -> dict[str, Any]:
    """``layer`` over ``base``: each key replaced, but for `MERGED_OPTIONS`, whose entries are merged (a
    sequence of ``ro_binds`` paths is the mapping of each path to itself)."""
    merged = {**base, **layer}
    for key in MERGED_OPTIONS:
        if key in base and key in layer:
            merged[key] = {**_as_mapping(base[key]), **_as_mapping(layer[key])}
    return merged


def _as_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, (list, tuple)):
        return {str(path): str(path) for path in value}
    raise ConfigError(f"sandbox option must be a mapping (or a list of paths), got {type(value).__name__}")


class ToolEnv(gymnasium.Env[str, Any]):
    """Base of the gym_swe envs; see the module docstring. Not registered itself."""

    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}  # noqa: RUF012  (gymnasium reads it so)

    def __init__(
        self,
        tasks: str = "bundled",
        sandbox: str = "local",
        sandbox_options: Mapping[str, Any] | None = None,
        limits: Limits | None = None,
        max_turns: int = 30,
        reward: str | RewardFunction = "binary",
        format_penalty: float = 0.0,
        max_observation_chars: int = 16_000,
        max_context_chars: int = 400_000,
        max_tool_calls: int = DEFAULT_MAX_TOOL_CALLS,
        max_step_seconds: float = DEFAULT_MAX_STEP_SECONDS,
        tools: Sequence[str] = DEFAULT_TOOLS,
        tool_options: Mapping[str, Mapping[str, Any]] | None = None,
        render_mode: str | None = None,
        **unknown: Any,
    ) -> None:
        reject_unknown_kwargs(type(self), unknown)
        if sandbox not in BACKENDS:
            raise ConfigError(unknown_name("sandbox", sandbox, BACKENDS))
        if not isinstance(max_turns, int) or isinstance(max_turns, bool) or max_turns < 1:
            raise ConfigError(f"max_turns must be a positive int, got {max_turns!r}")
        check_reward_mode(reward)
        if not isinstance(format_penalty, (int, float)) or format_penalty < 0:
            raise ConfigError(f"format_penalty must be a number >= 0, got {format_penalty!r}")
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ConfigError(unknown_name("render_mode", render_mode, self.metadata["render_modes"]))
        for name, value in (
            ("max_observation_chars", max_observation_chars),
            ("max_context_chars", max_context_chars),
        ):
            if not isinstance(value, int) or value < 100:
                raise ConfigError(f"{name} must be an int >= 100, got {value!r}")
        check_step_bounds(max_tool_calls, max_step_seconds)
        if limits is not None and not isinstance(limits, Limits):
            raise ConfigError(f"limits must be a gym_swe.sandbox.Limits, got {type(limits).__name__}")
        given = dict(sandbox_options or {}).get("limits", limits)  # as new_sandbox picks them
        check_limits(sandbox, given if isinstance(given, Limits) else Limits())
        self.task_source = tasks
        self.tasks: TaskSet[Any] = self._load_tasks(tasks)
        self.sandbox_backend = sandbox
        self.sandbox_options = dict(sandbox_options or {})
        self.limits = limits
        self.max_turns = max_turns
        self.reward_mode = reward
        self.format_penalty = float(format_penalty)
        self.max_observation_chars = max_observation_chars
        self.max_context_chars = max_context_chars
        self.max_tool_calls = max_tool_calls
        self.max_step_seconds = float(max_step_seconds)
        self.toolbox: ToolBox = make_toolbox(tools, tool_options)
        if "submit" not in self.toolbox.names:
            raise ConfigError(
                f"tools must include 'submit' (the agent's way to end the episode), got {list(tools)}"
            )
        self.render_mode = render_mode
        self.observation_space = CodeText(MAX_TEXT)
        self.action_space = CodeText(MAX_TEXT)

        self.task: Any = None
        self.sandbox: Sandbox | None = None
        self.messages: list[dict[str, Any]] = []
        """The chat of the current (or last) episode, OpenAI format; read it, never change it."""
        self.history: list[Turn] = []
        self.grade: Grade | None = None
        self._done = True
        self._context_chars = 0
        self._agent_seconds_left: float | None = None
        self._opening = ""
        self._clock: StepClock | None = None  # the running step's bound, for `interrupt`

    # -- what a subclass provides ---------------------------------------------------------------------------
    @abstractmethod
    def _load_tasks(self, source: str) -> TaskSet[Any]:
        """The task set for the ``tasks=`` kwarg."""

    @abstractmethod
    def _sandbox_options(self, task: Any) -> dict[str, Any]:
        """Backend kwargs for this task's sandboxes (workdir, image...), merged under ``sandbox_options``."""

    @abstractmethod
    def _prepare(self, task: Any, sandbox: Sandbox) -> None:
        """Set up the agent's workspace for ``task``."""

    @abstractmethod
    def _prompt(self, task: Any) -> tuple[str, str]:
        """The system and user messages that open the episode."""

    @abstractmethod
    def _grade(self, task: Any, sandbox: Sandbox) -> Grade:
        """Grade the final state of ``sandbox`` (the agent's) in a fresh sandbox, under ``reward_mode``."""

    def _agent_seconds(self, task: Any) -> float | None:
        """The agent's time for the whole episode (its commands' wall time, summed over its steps), or None
        for no bound beyond max_turns steps of max_step_seconds each. A task format that names one
        (Harbor's ``[agent] timeout_sec``) overrides this."""
        return None

    def opening_messages(self, task_id: str) -> list[dict[str, Any]]:
        """The chat ``reset`` opens ``task_id``'s episode with (system and user messages), without starting
        one: no sandbox is made. For prompts made ahead of the episodes (a dataset's rows)."""
        system, user = self._prompt(self.tasks.get(task_id))
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # -- the gymnasium API ----------------------------------------------------------------------------------
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        options = dict(options or {})
        unknown = set(options) - set(RESET_OPTIONS)
        if unknown:
            allowed = ", ".join(repr(name) for name in RESET_OPTIONS)
            raise ConfigError(f"reset options: unknown key(s) {sorted(unknown)}; allowed: {allowed}")
        episode_options = options.get("sandbox_options") or {}
        if not isinstance(episode_options, Mapping):
            raise ConfigError(
                f"reset option 'sandbox_options' must be a mapping of backend kwargs, got "
                f"{type(episode_options).__name__}"
            )
        if "task_id" in options:
            task = self.tasks.get(options["task_id"])
        else:
            task = self.tasks[int(self.np_random.integers(len(self.tasks)))]
        if not self._done and self.history:
            # The last episode was ended from outside (a step limit of a wrapper added after make, a loop
            # that stopped stepping) before the env could grade it: say so, since its final reward is missing.
            warnings.warn(
                f"The previous episode was left after {len(self.history)} step(s), before max_turns="
                f"{self.max_turns}, without a grade (its reward is missing). End an episode early with "
                "env.unwrapped.truncate(reason), which grades it (gymnasium.make's max_episode_steps is the "
                "env's own graded limit already).",
                stacklevel=2,
            )
        self._close_sandbox()
        self._done = True  # until this episode has started: a reset that fails leaves none running
        self.task, self.history, self.grade = task, [], None
        self.toolbox.reset()
        self.sandbox = self.new_sandbox(task, episode_options)
        try:
            self._prepare(task, self.sandbox)
        except BaseException:
            self._close_sandbox()
            raise
        system, user = self._prompt(task)
        self.messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        self._context_chars = len(system) + len(user)
        self._agent_seconds_left = self._agent_seconds(task)
        self._done = False
        observation = self._opening = f"{system}\n\n{user}"
        info = {"task_id": task.task_id, "messages": list(self.messages), "tools": self.toolbox.schemas()}
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._done:
            if self.task is None:
                raise GymSweError("step() before reset(): call reset() first to start an episode")
            raise GymSweError("step() after the episode ended: call reset() first")
        started = time.monotonic()
        turn = Turn(
            index=len(self.history), action=action if isinstance(action, (str, dict)) else safe_repr(action)
        )
        sandbox = self.sandbox
        assert sandbox is not None  # not done: reset made one, and only the episode's end closes it
        parsed = parse_action(action, self.toolbox.names)
        turn.calls = list(parsed.calls)
        turn.parse_errors = [error.message for error in parsed.errors]
        error: str | None = None
        exhausted: SandboxExhaustedError | None = None
        submitted = False
        # The step's bound (gym_swe.envs.step_bound): a cap on the calls run, and a wall-clock bound on
        # them together, enforced by clipping each command's timeout to the time left. A cut step does not
        # end the episode: like a command's own timeout it is feedback the agent can act on (run less at
        # once), and the episode stays bounded by max_turns steps of at most max_step_seconds each. An
        # episode that ends on a cut step anyway (its last turn) is graded as any other.
        budget = self._agent_seconds_left
        if budget is not None and budget < self.max_step_seconds:  # the episode's time ends within this step
            clock = self._clock = StepClock(budget, reason="agent_timeout")
        else:
            clock = self._clock = StepClock(self.max_step_seconds)
        bounded = BoundedSandbox(sandbox, clock)
        try:
            for index, call in enumerate(parsed.calls):
                if index >= self.max_tool_calls:
                    turn.step_limit = "max_tool_calls"
                    break
                if clock.reason is not None:
                    turn.step_limit = clock.reason
                    break
                try:
                    result = self.toolbox.run(bounded, call)
                except SandboxExhaustedError as crash:  # dead by the agent's own resource use: its failure
                    exhausted = crash
                    break
                except SandboxError as crash:  # tools turn refusals into results: this is a dead sandbox
                    error = str(crash)
                    break
                turn.results.append(result)
                if result.done:
                    submitted = True
                    break
                if clock.cut_command:  # the bound stopped this call's command: nothing more runs
                    turn.step_limit = clock.reason or "max_step_seconds"
                    turn.stopped_call = True
                    break
        finally:
            self._clock = None
        skipped = len(parsed.calls) - len(turn.results)
        observation = self._turn_writer().observation(turn, skipped if submitted else 0, error, exhausted)
        turn.observation = observation
        turn.seconds = time.monotonic() - started
        if budget is not None:
            self._agent_seconds_left = budget - turn.seconds
        self.history.append(turn)
        self._record_messages(action, parsed, turn)

        penalty = self.format_penalty if (turn.parse_errors or not turn.calls) else 0.0
        terminated = submitted or exhausted is not None
        truncated = not terminated and (
            error is not None
            or len(self.history) >= self.max_turns
            or self._context_chars > self.max_context_chars
            or self._out_of_agent_time()
        )
        reward = -penalty if penalty else 0.0
        info: dict[str, Any] = {
            "task_id": self.task.task_id,
            "turn": turn.index,
            "parse_errors": turn.parse_errors,
            "tool_calls": [c.name for c in turn.calls],
            "format_penalty": penalty,
            "messages": list(self.messages),
        }
        if turn.step_limit is not None:
            info["step_limit"] = turn.step_limit
        if error is not None:
            info["error"] = error
        if exhausted is not None:
            reward += self._finish(info, f"out_of_{exhausted.resource}", None, exhausted)
        elif terminated or truncated:
            reward += self._finish(info, self._end_reason(submitted, error), error)
        if self.render_mode == "human":
            print(render_turn(turn))
        return observation, reward, terminated, truncated, info

    def truncate(self, reason: str) -> dict[str, Any]:
        """End the episode from outside, as a truncation: a rollout out of token budget, a generator that
        failed. The final state is graded as at ``max_turns``; returns the info a last step would have, its
        ``reward_grade`` being the reward that step would have paid."""
        if self._done:
            raise GymSweError("truncate() after the episode ended: call reset() first")
        info: dict[str, Any] = {"task_id": self.task.task_id, "turn": len(self.history) - 1}
        self._finish(info, reason, None)
        info["messages"] = list(self.messages)
        return info

    def interrupt(self) -> bool:
        """From another thread: stop the step that is running. Its running command is stopped
        (`Sandbox.interrupt`: SIGINT, then SIGKILL a second later) and no further call of the step runs; the
        step returns with ``info["step_limit"] == "interrupted"``, the episode going on. False when no step
        was running. (A command that was starting at that instant may escape the signal: it still ends at
        the step's time bound, or when the sandbox is closed.)"""
        clock, sandbox = self._clock, self.sandbox
        if clock is None:
            return False
        clock.stop()
        if sandbox is not None:
            try:
                sandbox.interrupt()
            except GymSweError:
                pass  # a sandbox that died has no command left to stop
        return True

    @property
    def done(self) -> bool:
        """Whether no episode is running: True before the first reset, after the step or `truncate` that
        ended an episode, and after a reset that failed; False from a reset until then. (An episode cut by
        a wrapper added after ``gymnasium.make`` is still running here: its wrapper ended it, not the env;
        `truncate` grades it.)"""
        return self._done

    def _finish(
        self,
        info: dict[str, Any],
        reason: str,
        error: str | None,
        exhausted: SandboxExhaustedError | None = None,
    ) -> float:
        """Grade the final state into ``info`` and close the sandbox; returns the grade's reward."""
        self._done = True
        info["end_reason"] = reason
        grade = self._final_grade(error, exhausted)
        self.grade = grade
        info["grade"] = grade.to_dict()
        info["reward_grade"] = self._reward_of(grade)
        if grade.error and error is None:
            info["error"] = grade.error  # the grader's failure; a rejected submission is no error
        self._close_sandbox()
        return float(info["reward_grade"])

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        text = render_turn(self.history[-1]) if self.history else self._opening
        if self.render_mode == "human":
            print(text)
            return None
        return text

    def close(self) -> None:
        self._close_sandbox()
        super().close()

    # -- the loop's parts -----------------------------------------------------------------------------------
    def new_sandbox(self, task: Any, extra: Mapping[str, Any] | None = None) -> Sandbox:
        """A fresh sandbox for ``task`` with this env's backend and options, and ``extra`` options over them
        (a reset's ``sandbox_options``: the agent's sandbox only). ``ro_binds`` and ``env`` are merged, not
        replaced: a task's prepared environment keeps its binds and variables under the env's and the
        episode's."""
        options: dict[str, Any] = {}
        for layer in (self._sandbox_options(task), self.sandbox_options, extra or {}):
            options = merged_sandbox_options(options, layer)
        if self.limits is not None:
            options.setdefault("limits", self.limits)
        return make_sandbox(self.sandbox_backend, **options)

    def _turn_writer(self) -> TurnWriter:
        """How this env tells a turn to the agent: its bounds as they are now."""
        return TurnWriter(self.max_observation_chars, self.max_tool_calls, self.max_step_seconds)

    def _record_messages(self, action: Any, parsed: ParsedCalls, turn: Turn) -> None:
        """Append the turn to the chat (`TurnWriter.messages`) and count it against the context budget."""
        new = self._turn_writer().messages(action, parsed, turn)
        self.messages.extend(new)
        self._context_chars += sum(
            len(str(m.get("content") or "")) + len(json.dumps(m.get("tool_calls", ""))) for m in new
        )

    def _end_reason(self, submitted: bool, error: str | None) -> str:
        if submitted:
            return "submitted"
        if error is not None:
            return "sandbox_error"
        if self._context_chars > self.max_context_chars:
            return "context_budget"
        if self._out_of_agent_time():
            return "agent_timeout"
        return "max_turns"

    def _out_of_agent_time(self) -> bool:
        return self._agent_seconds_left is not None and self._agent_seconds_left <= 0

    def _final_grade(self, error: str | None, exhausted: SandboxExhaustedError | None = None) -> Grade:
        if exhausted is not None:  # nothing is left to grade, and it was the agent's doing
            return Grade(tests=(), resolved=False, reward=0.0, rejection=f"not graded: {exhausted}")
        if error is not None:
            return Grade(tests=(), resolved=False, reward=0.0, error=f"not graded: {error}")
        assert self.sandbox is not None
        try:
            self.sandbox.kill_processes()  # nothing the agent left running may change the workspace now
            return self._grade(self.task, self.sandbox)
        except SubmissionRejected as rejected:
            return Grade(tests=(), resolved=False, reward=0.0, rejection=str(rejected))
        except SandboxExhaustedError as exhausted_late:
            # The agent's sandbox while it is read, or the grading one while the agent's code runs in it: the
            # memory was used up by what the agent left (files on its tmpfs mounts) or by its code.
            reason = f"the agent's work used up a sandbox's resources while it was graded: {exhausted_late}"
            return Grade(tests=(), resolved=False, reward=0.0, rejection=reason)
        except GymSweError as failure:
            return Grade(tests=(), resolved=False, reward=0.0, error=f"grading failed: {failure}")

    def _reward_of(self, grade: Grade) -> float:
        if callable(self.reward_mode):
            return float(self.reward_mode(grade, list(self.history)))
        return grade.reward

    def _close_sandbox(self) -> None:
        sandbox, self.sandbox = self.sandbox, None
        if sandbox is not None:
            try:
                sandbox.close()
            except GymSweError:
                pass  # a sandbox that died already has nothing left to close


def reject_unknown_kwargs(env_class: type, unknown: Mapping[str, Any]) -> None:
    """A wrong kwarg to ``gymnasium.make`` fails at once, naming the allowed ones."""
    if not unknown:
        return
    allowed: list[str] = []
    for klass in env_class.__mro__[: env_class.__mro__.index(ToolEnv) + 1]:
        init = vars(klass).get("__init__")
        if init is None:
            continue
        for name, parameter in inspect.signature(init).parameters.items():
            keyword = parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
            if keyword and name != "self" and name not in allowed:
                allowed.append(name)
    raise ConfigError(unknown_name(f"keyword argument of {env_class.__name__}:", sorted(unknown)[0], allowed))
