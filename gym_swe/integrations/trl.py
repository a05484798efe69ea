"""gym_swe envs in TRL's `GRPOTrainer` (TRL >= 1.16), two ways.

**environment_factory** (`environment_class`, `trl_spec`): TRL drives the conversation. It renders the
prompt with the env's tools (the public methods of the class), parses the model's tool calls with its own
parser and calls the methods one rollout after the other. Each method is one step of a gym_swe env, so the
sandbox, the limits and the grading are gym_swe's; ``get_reward`` is the grade's reward. The env is made in
this process, or is a session of one served by ``gym-swe serve`` on another machine (``env_url=``);
`EnvironmentFactory` is the same as an object that pickles, for ``AsyncGRPOTrainer``'s spawned rollout worker.

    spec = trl_spec("CodeDebug-v0")
    trainer = GRPOTrainer(model=..., args=GRPOConfig(...), **spec.trainer_kwargs())
    trainer = GRPOTrainer(model=..., args=..., train_dataset=..., environment_factory=environment_class(
        env_url="http://envs:8000"))

**rollout_func** (`GymSweRollout`): gym_swe drives it. Its collector plays the episodes of a batch in
parallel, parses tool calls in every format gym_swe knows, keeps the exact sampled ids and their
log-probabilities, and hands TRL one completion per prompt, with ``env_mask`` from the trajectory's loss
mask (tool output and template tokens are not trained on) and the reward and grade as extra fields.

    rollout = GymSweRollout("CodeDebug-v0", generator=None)   # None: sample with the trainer's model
    trainer = GRPOTrainer(model=..., args=..., train_dataset=rollout.dataset(),
                          reward_funcs=rollout.reward_funcs(), rollout_func=rollout)

It talks to the generator itself: TRL's in-trainer vLLM generate is a collective call, and ranks whose
episodes take different numbers of turns would deadlock in it.
"""

from __future__ import annotations

import json
import types
import weakref
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import gymnasium

import gym_swe  # noqa: F401  (registers the envs)
from gym_swe.errors import ConfigError, GymSweError, missing_dependency, unknown_name
from gym_swe.rollout.episode_env import EpisodeEnv, as_episode_env

if TYPE_CHECKING:
    from gym_swe.rollout.generators.base import Generator
    from gym_swe.rollout.trajectory import Trajectory

EPISODE_OVER = "The episode is over: no more tool calls run. Stop here."


# -- environment_factory ------------------------------------------------------------------------------------
# One typed method per gym_swe tool. TRL builds each tool's schema from the signature and the docstring,
# which `_tool_method` writes from the env's own schema, so the model sees what it would see from the env.
def _bash(self: GymSweEnvironment, command: str, timeout: int | None = None) -> str:
    return self._call("bash", {"command": command, "timeout": timeout})


def _str_replace_editor(
    self: GymSweEnvironment,
    command: Literal["view", "create", "str_replace", "insert", "undo_edit"],
    path: str,
    file_text: str | None = None,
    old_str: str | None = None,
    new_str: str | None = None,
    insert_line: int | None = None,
    view_range: list[int] | None = None,
) -> str:
    arguments = {"command": command, "path": path, "file_text": file_text, "old_str": old_str,
                 "new_str": new_str, "insert_line": insert_line, "view_range": view_range}  # fmt: skip
    return self._call("str_replace_editor", arguments)


def _submit(self: GymSweEnvironment) -> str:
    return self._call("submit", {})


TOOL_METHODS: dict[str, Callable[..., str]] = {
    "bash": _bash,
    "str_replace_editor": _str_replace_editor,
    "submit": _submit,
}


def _tool_method(schema: dict[str, Any]) -> Callable[..., str]:
    """The method for one tool, with a Google-style docstring from its schema (what TRL reads)."""
    function = schema["function"]
    implementation = TOOL_METHODS[function["name"]]
    # A copy of the implementation under the tool's name: its own signature and annotations, a new docstring.
    method = types.FunctionType(
        implementation.__code__, implementation.__globals__, function["name"], implementation.__defaults__
    )
    lines = [function["description"].strip()]
    properties = function["parameters"].get("properties", {})
    if properties:
        lines += ["", "Args:"]
        for name, prop in properties.items():
            text = prop.get("description", name).replace("\n", " ")
            lines.append(f"    {name}: {text}")
    lines += ["", "Returns:", "    What the tool printed, or why it could not run."]
    method.__qualname__ = function["name"]
    method.__doc__ = "\n".join(lines)
    # All but self's (there for the type checker): TRL would take an annotated self for a tool argument.
    hints = implementation.__annotations__
    method.__annotations__ = {key: hint for key, hint in hints.items() if key != "self"}
    return method


class GymSweEnvironment:
    """A gym_swe env as TRL's ``environment_factory`` wants it: by composition, not a ``gymnasium.Env``
    subclass (TRL turns every public method into a tool, so ``step``, ``render`` and ``close`` would leak).

    Use `environment_class` for the class of one env: its public methods are then exactly the env's tools.
    The env is made in this process, or is a session of one served by ``gym-swe serve`` (``env_url``): the
    methods play it through the episode-env contract either way. TRL pools instances and never closes them, so
    each ``reset`` ends the previous episode's sandbox, and a finalizer closes the env when the instance goes;
    `gym-swe sandbox prune` removes what a killed process left (by the sandboxes' labels and owner pids).
    """

    env_id: str = ""
    env_url: str = ""
    """A served env's address (then the server's kwargs are the env's); empty: the env is made here."""
    make_kwargs: dict[str, Any] = {}  # noqa: RUF012  (set per subclass by environment_class)

    def __init__(self) -> None:
        if not self.env_id:
            raise ConfigError("use gym_swe.integrations.trl.environment_class(env_id) to get a class per env")
        self._env: EpisodeEnv
        if self.env_url:
            from gym_swe.serve.client import ServedEnv

            self._env = ServedEnv(self.env_url)
        else:
            max_turns = self.make_kwargs.get("max_turns")
            steps = {"max_episode_steps": max_turns} if max_turns else {}
            self._env = as_episode_env(gymnasium.make(self.env_id, **steps, **self.make_kwargs))
        self._finalizer = weakref.finalize(self, self._env.close)
        self._info: dict[str, Any] = {}
        self._done = True
        self._started = False
        self._turns = 0

    def reset(self, task_id: str | None = None, **row: Any) -> str:
        """Start ``task_id``'s episode (a random task without one); returns the task's prompt, which TRL
        appends to the row's last user message (empty in `trl_dataset` rows). Other row fields are ignored."""
        options = {"task_id": task_id} if task_id is not None else None
        _, info = self._env.reset(options=options)
        self._info, self._done, self._started, self._turns = info, False, True, 0
        prompt: str = info["messages"][-1]["content"]
        return prompt

    def get_reward(self) -> float:
        """The grade's reward. An episode the model ended without ``submit`` is graded as it stands."""
        if not self._started:
            raise GymSweError("get_reward() before reset(): no episode to grade")
        if not self._done:
            self._info = self._env.truncate("no_tool_call")
            self._done = True
        return float(self._info["reward_grade"])

    @property
    def turns(self) -> int:
        """Turns the current (or last) episode has played."""
        return self._turns

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The chat of the current (or last) episode, as the env keeps it (its tool results included)."""
        return self._env.messages

    @property
    def grade(self) -> dict[str, Any] | None:
        """The last episode's grade (per-test outcomes), once it ended."""
        return self._info.get("grade")

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if not self._started:
            raise GymSweError(f"{name}() before reset(): TRL calls reset first")
        if self._done:
            return EPISODE_OVER
        arguments = {key: value for key, value in arguments.items() if value is not None}
        encoded = json.dumps(arguments, ensure_ascii=False)
        call = {"id": "call0", "type": "function", "function": {"name": name, "arguments": encoded}}
        observation, _, terminated, truncated, info = self._env.step(
            {"role": "assistant", "content": "", "tool_calls": [call]}
        )
        self._turns += 1
        if terminated or truncated:
            self._info, self._done = info, True
        text: str = observation
        return text


def environment_class(
    env_id: str = "CodeDebug-v0", env_url: str | None = None, **make_kwargs: Any
) -> type[GymSweEnvironment]:
    """A `GymSweEnvironment` class for ``env_id`` made with ``make_kwargs`` (``tasks=``, ``sandbox=``,
    ``max_turns=``, ``tools=``...): pass it as ``environment_factory``. Its tools are the env's.

    ``env_url``: the env served at that address by ``gym-swe serve`` instead (each instance a session of its
    own): the server's env and kwargs are the env's, so ``env_id`` is read from it and no kwargs are taken."""
    if env_url:
        from gym_swe.serve.client import ServedEnv

        if make_kwargs:
            raise ConfigError(
                f"environment_class(env_url=...): the server's kwargs are the env's; {sorted(make_kwargs)} "
                "would do nothing (give them to gym-swe serve)"
            )
        with ServedEnv(env_url) as served:
            env_id, schemas = served.env_id, served.tools
    else:
        from gym_swe.envs.unwrapped import tool_env

        probe = gymnasium.make(env_id, **make_kwargs)
        try:
            schemas = tool_env(probe).toolbox.schemas()
        finally:
            probe.close()
    names = [schema["function"]["name"] for schema in schemas]
    unknown = [name for name in names if name not in TOOL_METHODS]
    if unknown:
        raise ConfigError(
            f"environment_class: no TRL method for tool(s) {unknown}; the tools it has: {list(TOOL_METHODS)}"
        )
    namespace: dict[str, Any] = {schema["function"]["name"]: _tool_method(schema) for schema in schemas}
    namespace.update(env_id=env_id, env_url=env_url or "", make_kwargs=dict(make_kwargs),
                     __doc__=GymSweEnvironment.__doc__)  # fmt: skip
    name = "".join(part[:1].upper() + part[1:] for part in env_id.replace("-", "_").split("_"))
    return type(f"{name}Environment", (GymSweEnvironment,), namespace)


_CLASSES: dict[str, type[GymSweEnvironment]] = {}


@dataclass(frozen=True)
class EnvironmentFactory:
    """``environment_factory`` as an object that pickles: TRL's ``AsyncGRPOTrainer`` runs its rollouts in a
    spawned process and sends it the factory pickled, which a class `environment_class` makes on the fly
    cannot be. The factory makes that class in the process it is called in, once, and returns an instance.

        factory = EnvironmentFactory(env_url="http://envs:8000")   # a served env; or env_id=..., make_kwargs=
        trainer = AsyncGRPOTrainer(model, args=..., environment_factory=factory)
    """

    env_id: str = "CodeDebug-v0"
    env_url: str | None = None
    make_kwargs: dict[str, Any] = field(default_factory=dict)

    def __call__(self) -> GymSweEnvironment:
        key = json.dumps([self.env_id, self.env_url, self.make_kwargs], sort_keys=True, default=repr)
        if key not in _CLASSES:
            _CLASSES[key] = environment_class(self.env_id, self.env_url, **self.make_kwargs)
        return _CLASSES[key]()


def trl_tools(env_id: str = "CodeDebug-v0", **make_kwargs: Any) -> list[Callable[..., str]]:
    """The tools TRL renders ``env_id``'s prompts with: the tool methods of an `environment_class` instance
    (TRL writes each one's schema from its signature and docstring), as ``apply_chat_template(tools=...)``
    takes them. To render what a model meets under ``environment_factory``."""
    environment = environment_class(env_id, **make_kwargs)()
    return [getattr(environment, name) for name in TOOL_METHODS if hasattr(environment, name)]


def trl_dataset(
    env_id: str = "CodeDebug-v0",
    task_ids: Sequence[str] | None = None,
    repeat: int = 1,
    full_prompt: bool = False,
    env_url: str | None = None,
    **make_kwargs: Any,
) -> Any:
    """A ``datasets.Dataset`` of the env's tasks for ``train_dataset``: columns ``prompt`` and ``task_id``.

    ``full_prompt=False`` (for environment_factory): ``prompt`` is the system message and an empty user
    message, which TRL fills with what ``reset`` returns. ``True`` (for rollout_func): the env's whole
    opening chat. ``repeat``: each task that many times (epochs within the dataset). ``env_url``: the tasks
    of the env served there (its task API), instead of one made here with ``make_kwargs``.
    """
    try:
        from datasets import Dataset
    except ImportError:
        raise missing_dependency("datasets", "datasets") from None
    if not isinstance(repeat, int) or repeat < 1:
        raise ConfigError(f"repeat must be an int >= 1, got {repeat!r}")
    prompts = _served_prompts(env_url, make_kwargs) if env_url else _local_prompts(env_id, make_kwargs)
    ids = list(task_ids) if task_ids is not None else list(prompts)
    unknown = [task_id for task_id in ids if task_id not in prompts]
    if unknown:
        raise ConfigError(unknown_name("task id", unknown[0], prompts))
    rows: dict[str, list[Any]] = {"prompt": [], "task_id": []}
    for task_id in ids:
        prompt = [dict(message) for message in prompts[task_id]]
        if not full_prompt:
            prompt[-1]["content"] = ""
        rows["prompt"].append(prompt)
        rows["task_id"].append(task_id)
    return Dataset.from_dict({key: values * repeat for key, values in rows.items()})


def _local_prompts(env_id: str, make_kwargs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each task's opening chat, from an env made here (no sandbox is made)."""
    from gym_swe.envs.unwrapped import tool_env

    env = tool_env(gymnasium.make(env_id, **make_kwargs))
    try:
        return {task.task_id: env.opening_messages(task.task_id) for task in env.tasks}
    finally:
        env.close()


def _served_prompts(env_url: str, make_kwargs: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Each task's opening chat, from the task API of the env served at ``env_url``."""
    from gym_swe.serve.client import ServedEnv

    if make_kwargs:
        raise ConfigError(
            f"with env_url the server's kwargs are the env's; {sorted(make_kwargs)} would do nothing"
        )
    with ServedEnv(env_url) as served:
        return {str(task["id"]): list(task["prompt"]) for task in served.tasks()}


@dataclass
class TRLSpec:
    """What `GRPOTrainer` needs for a gym_swe env: ``GRPOTrainer(model=..., args=...,
    **spec.trainer_kwargs())``."""

    train_dataset: Any
    environment_factory: type[GymSweEnvironment]
    reward_funcs: list[Callable[..., Any]] = field(default_factory=list)
    """Rewards beside the env's: empty by default, since TRL adds the env's ``get_reward`` itself."""

    def trainer_kwargs(self) -> dict[str, Any]:
        return {
            "train_dataset": self.train_dataset,
            "environment_factory": self.environment_factory,
            "reward_funcs": list(self.reward_funcs),
        }


def trl_spec(
    env_id: str = "CodeDebug-v0",
    task_ids: Sequence[str] | None = None,
    repeat: int = 1,
    reward_funcs: Sequence[Callable[..., Any]] = (),
    **make_kwargs: Any,
) -> TRLSpec:
    """The dataset, the environment class and the reward functions for ``env_id``, in one call."""
    return TRLSpec(
        train_dataset=trl_dataset(env_id, task_ids, repeat, **make_kwargs),
        environment_factory=environment_class(env_id, **make_kwargs),
        reward_funcs=list(reward_funcs),
    )


# -- rollout_func -----------------------------------------------------------------------------------------
class GymSweRollout:
    """A TRL ``rollout_func`` on gym_swe's collector: pass the instance as ``rollout_func``.

    Args:
        env_id: the env; ``make_kwargs`` go to ``gymnasium.make`` (``tasks=``, ``sandbox=``, ``max_turns=``).
        generator: a gym_swe generator (``VLLMServerGenerator``, ``HFGenerator``...). None: an ``HFGenerator``
            on the trainer's own model (CPU runs, tests). A generator with weights of its own gets
            ``sync_weights(model)`` before the first rollout after each optimizer step.
        parallel: how many episodes run at once (envs kept between batches, each with its sandbox).
        max_model_len: the longest trajectory, prompt included.

    Each prompt TRL passes is looked up in the prompts of `dataset` (the env's opening chat) to find its
    task; the n-th copy of a task in a batch is its sample n. Per-turn ``max_tokens`` and the temperature
    come from the trainer's ``max_completion_length`` and ``temperature``.
    """

    def __init__(
        self,
        env_id: str = "CodeDebug-v0",
        generator: Generator | None = None,
        parallel: int = 16,
        max_model_len: int = 8192,
        **make_kwargs: Any,
    ) -> None:
        if not isinstance(parallel, int) or parallel < 1:
            raise ConfigError(f"parallel must be an int >= 1, got {parallel!r}")
        self.env_id, self.make_kwargs = env_id, dict(make_kwargs)
        self.generator, self.parallel, self.max_model_len = generator, parallel, max_model_len
        self._envs: list[gymnasium.Env[Any, Any]] = []
        self._task_by_prompt: dict[str, str] = {}
        self._synced_step: int | None = None
        self.trajectories: list[Trajectory] = []
        """The last batch's trajectories, in prompt order (for logs and checks)."""

    def dataset(self, task_ids: Sequence[str] | None = None, repeat: int = 1) -> Any:
        """``train_dataset`` rows (the env's opening chat as ``prompt``, and ``task_id``) for these tasks."""
        rows = trl_dataset(self.env_id, task_ids, repeat, full_prompt=True, **self.make_kwargs)
        for prompt, task_id in zip(rows["prompt"], rows["task_id"]):
            self._task_by_prompt[_prompt_key(prompt)] = task_id
        return rows

    def reward_funcs(self) -> list[Callable[..., Any]]:
        """The reward TRL should train on: the episode's return from the env (None for a failed one)."""

        def gym_swe_reward(reward: list[float | None], **_: Any) -> list[float | None]:
            return list(reward)

        return [gym_swe_reward]

    def close(self) -> None:
        envs, self._envs = self._envs, []
        for env in envs:
            env.close()

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        task_ids = [self._task_of(prompt) for prompt in prompts]
        was_training = trainer.model.training  # TRL tells training from eval by it; HFGenerator sets eval
        try:
            return self._collect(task_ids, trainer)
        finally:
            trainer.model.train(was_training)

    def _collect(self, task_ids: list[str], trainer: Any) -> dict[str, list[Any]]:
        from gym_swe.rollout.collector import collect
        from gym_swe.rollout.generators.base import SamplingParams

        generator = self._generator(trainer)
        sampling = SamplingParams(
            max_tokens=int(trainer.args.max_completion_length), temperature=float(trainer.args.temperature)
        )
        while len(self._envs) < min(self.parallel, len(task_ids)):
            self._envs.append(self._make_env())
        # The collector plays n samples of each task; a batch can hold tasks with different counts (a group
        # split across processes), so each count gets a call of its own.
        counts = Counter(task_ids)
        by_job: dict[tuple[str, int], Trajectory] = {}
        for count in sorted(set(counts.values())):
            tasks = [task for task in dict.fromkeys(task_ids) if counts[task] == count]
            found = collect(self._envs, generator, tasks, samples_per_task=count, sampling=sampling,
                            max_model_len=self.max_model_len, check_rerender=False)  # fmt: skip
            by_job.update({(t.task_id, t.sample_index): t for t in found})
        seen: Counter[str] = Counter()
        self.trajectories = []
        for task_id in task_ids:
            self.trajectories.append(by_job[(task_id, seen[task_id])])
            seen[task_id] += 1
        return _trl_fields(self.trajectories)

    def _task_of(self, prompt: Any) -> str:
        task_id = self._task_by_prompt.get(_prompt_key(prompt))
        if task_id is None:
            raise ConfigError(
                "rollout_func got a prompt that is not in its dataset: build train_dataset with "
                "GymSweRollout.dataset() (its prompts name the tasks)"
            )
        return task_id

    def _make_env(self) -> gymnasium.Env[Any, Any]:
        max_turns = self.make_kwargs.get("max_turns")
        steps = {"max_episode_steps": max_turns} if max_turns else {}
        return gymnasium.make(self.env_id, **steps, **self.make_kwargs)

    def _generator(self, trainer: Any) -> Generator:
        if self.generator is None:
            from gym_swe.rollout.generators.hf import HFGenerator

            model = trainer.accelerator.unwrap_model(trainer.model)
            self.generator = HFGenerator(model, trainer.processing_class)
            self._synced_step = trainer.state.global_step  # it samples with the trained weights themselves
        if self._synced_step != trainer.state.global_step:
            self.generator.sync_weights(trainer.accelerator.unwrap_model(trainer.model))
            self._synced_step = trainer.state.global_step
        return self.generator


def _prompt_key(prompt: Any) -> str:
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def _trl_fields(trajectories: Sequence[Trajectory]) -> dict[str, list[Any]]:
    """What TRL's rollout_func returns, one completion per trajectory: the exact ids, the sampling
    log-probabilities (0.0 where the env, not the model, wrote the token: ``env_mask`` masks those out),
    and the env's reward and grade."""
    keys = ("prompt_ids", "completion_ids", "logprobs", "env_mask", "reward", "grade", "task_id", "error")
    fields: dict[str, list[Any]] = {key: [] for key in keys}
    for trajectory in trajectories:
        start = trajectory.prompt_length
        completion = trajectory.token_ids[start:]
        mask = trajectory.loss_mask[start:]
        if not completion:  # no turn at all (a failed reset): one masked token keeps the shapes valid
            completion, mask = [trajectory.token_ids[-1] if trajectory.token_ids else 0], [0]
        logprobs = [value if value is not None else 0.0 for value in trajectory.logprobs[start:]]
        fields["prompt_ids"].append(trajectory.token_ids[:start])
        fields["completion_ids"].append(completion)
        fields["logprobs"].append(logprobs + [0.0] * (len(completion) - len(logprobs)))
        fields["env_mask"].append(mask)
        fields["reward"].append(None if trajectory.failed else trajectory.reward)
        fields["grade"].append(trajectory.grade)
        fields["task_id"].append(trajectory.task_id)
        fields["error"].append(trajectory.error)
    return fields
