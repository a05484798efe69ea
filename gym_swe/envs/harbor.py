"""Harbor-v0: play a Harbor task folder (Terminal-Bench 2 style) with gym_swe's tools, graded by its
verifier."""

from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Any

from gym_swe.envs.base import ToolEnv, system_prompt
from gym_swe.errors import ConfigError, TaskRefused, unknown_name
from gym_swe.grading.base import Grade
from gym_swe.grading.harbor import (
    SOLUTION_PATH,
    TESTS_PATH,
    VERIFIER_DIR,
    VerifierRun,
    carry_workdir,
    run_oracle,
    run_verifier,
    stage_verifier,
    verifier_grade,
)
from gym_swe.sandbox import Limits, Sandbox
from gym_swe.tasks.base import TaskSet
from gym_swe.tasks.harbor import HarborTask, load_harbor_tasks
from gym_swe.tasks.repos import cache_root

logger = logging.getLogger("gym_swe.envs.harbor")
INTEGRITY_LEVELS = ("protected", "any")

USER_PROMPT = """{instruction}

---
You work in {workdir}. What is graded is the state of {workdir} when you call submit (or when your turns run \
out), by tests you cannot see, in a fresh copy of this environment: changes outside {workdir} (packages you \
install, files elsewhere) are not kept. When the task is done, call submit."""


class HarborEnv(ToolEnv):
    """Play a Harbor task (``task.toml``, ``instruction.md``, ``environment/``, ``tests/test.sh``) with
    gym_swe's tools; the reward is its verifier's, run the way gym_swe grades.

    ## Description
    Each episode is one task folder: the agent gets ``instruction.md`` and works in the task's work dir
    (``[environment] workdir``, else the Dockerfile's WORKDIR, else /app) inside the task's own environment,
    built from ``environment/Dockerfile`` (docker sandbox, cached by content). After its last command the
    work dir is carried into a fresh sandbox of the same image, ``tests/`` is copied in at /tests (never
    present while the agent works), and ``bash /tests/test.sh`` runs with the verifier's timeout; its
    reward (``/logs/verifier/reward.json`` or ``reward.txt``) is read with a size bound after every process
    is killed.
    State outside the work dir is not carried (see docs/harbor.md).

    ## Action Space, Observation Space
    As every gym_swe env (`CodeDebugEnv`): text or an assistant message with tool calls; ``bash``,
    ``str_replace_editor``, ``submit``. The observation never holds the tests, the verifier's output or the
    reward.

    ## Rewards
    0 on every step but the last. On the last: with ``reward="binary"`` (default) 1.0 when the verifier's
    reward is 1 (and every sealed check holds), else 0.0; with ``"fraction"`` the verifier's reward itself
    (clipped to [0, 1], said in the grade's log). A missing or malformed reward file is 0 with the reason in
    ``info["grade"]["rejection"]``.

    ## Integrity
    Code under test runs inside test.sh's process tree and can write the reward file itself. A verifier that
    also writes ``/logs/verifier/checks.json`` (name -> value) has those values **sealed**: the task's oracle
    (``solution/solve.sh``) is run once per task and environment, its checks kept on the host, and a grade
    resolves only when every check equals the oracle's (``Grade.integrity`` "sealed"). ``integrity``:
    ``"protected"`` (default) pays sealed grades only: a task without ``solution/solve.sh`` is refused at
    load, and a grade of a task whose verifier writes no checks is "not graded" (``Grade.error``);
    ``"any"`` pays the verifier's reward alone (no oracle run; ``Grade.integrity`` "unprotected").

    ## Episode End
    As `SWEGymEnv`: terminated after ``submit``, truncated at ``max_turns`` (50), the context budget or the
    task's agent time (``[agent] timeout_sec``, counted as the agent's commands' wall time summed over its
    steps: the model's time between steps is the trainer's, not the agent's; the step that reaches it is
    cut there, ``info["step_limit"]`` and ``end_reason`` "agent_timeout"), graded either way;
    a dead sandbox ends the episode with ``info["error"]``. An image that does not build fails
    that episode's ``reset`` with the reason (a `TaskError` naming the Dockerfile); other episodes go on.

    ## Arguments
    - ``tasks``: ``"bundled"`` (gym_swe's own tasks in Go, Rust and TypeScript), a Harbor task folder, or a
      folder of them. A task's id is its folder's name.
    - ``sandbox``: ``"docker"`` for tasks with an environment of their own (a Dockerfile or
      ``docker_image``); ``"local"`` plays only tasks without one (an empty work dir on the host's system,
      /tests read-only); a task the backend cannot play is refused at load.
    - ``integrity``: ``"protected"`` or ``"any"`` (above). ``verifier_timeout``: seconds for test.sh,
      overriding every task's ``[verifier] timeout_sec``. ``agent_timeout``: the agent's seconds for the
      episode, overriding every task's ``[agent] timeout_sec``.
    - ``max_turns`` (50), ``reward``, ``format_penalty``, ``max_observation_chars``, ``max_context_chars``,
      ``max_tool_calls``, ``max_step_seconds``, ``tools``, ``tool_options``, ``limits``, ``sandbox_options``,
      ``render_mode``: as every gym_swe env.

    ## Version History
    - v0: first version.
    """

    def __init__(
        self,
        integrity: str = "protected",
        verifier_timeout: float | None = None,
        agent_timeout: float | None = None,
        **kwargs: Any,
    ) -> None:
        if integrity not in INTEGRITY_LEVELS:
            raise ConfigError(unknown_name("integrity", integrity, INTEGRITY_LEVELS))
        for name, value in (("verifier_timeout", verifier_timeout), ("agent_timeout", agent_timeout)):
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0
            ):
                raise ConfigError(f"{name} must be a positive number of seconds, got {value!r}")
        self.integrity = integrity
        self.verifier_timeout = None if verifier_timeout is None else float(verifier_timeout)
        self.agent_timeout = None if agent_timeout is None else float(agent_timeout)
        self._backend = kwargs.get("sandbox", "local")  # _load_tasks runs inside ToolEnv.__init__
        kwargs.setdefault("max_turns", 50)
        kwargs.setdefault("max_context_chars", 800_000)
        super().__init__(**kwargs)
        self._seals: dict[tuple[str, ...], dict[str, Any]] = {}

    # -- ToolEnv's parts -------------------------------------------------------------------------------------
    def _load_tasks(self, source: str) -> TaskSet[HarborTask]:
        if not isinstance(source, str):
            source = str(source)
        tasks = load_harbor_tasks(source)
        kept, refused = [], dict(tasks.refused)
        for task in tasks:
            why = self._refusal(task)
            if why is None:
                kept.append(task)
            else:
                logger.warning("refused %s: %s", task.task_id, why)
                refused[task.task_id] = why
        if not kept and len(refused) == 1:
            raise TaskRefused("{}: {}".format(*next(iter(refused.items()))))
        return TaskSet(kept, tasks.source, refused)

    def _refusal(self, task: HarborTask) -> str | None:
        """Why this env cannot play ``task`` (its backend, its integrity), or None."""
        if self._backend == "local" and task.has_environment:
            what = "environment/Dockerfile" if task.dockerfile is not None else "environment.docker_image"
            return f"it brings its own environment ({what}): sandbox='docker' plays it"
        if self.integrity == "protected" and task.solution_dir is None:
            return (
                "no solution/solve.sh, so no check of its verifier can be sealed, and code "
                "under test can write the reward file itself; integrity='any' plays it unprotected"
            )
        return None

    def _sandbox_options(self, task: HarborTask) -> dict[str, Any]:
        options: dict[str, Any] = {"workdir": task.workdir, "env": dict(task.environment_env)}
        if task.allow_internet:
            options["network"] = True
        limits = self._task_limits(task)
        if limits is not None:
            options["limits"] = limits
        if self.sandbox_backend == "docker":
            from gym_swe.tasks.harbor_images import harbor_image

            options["image"] = harbor_image(task, log=logger.info)
        return options

    def _task_limits(self, task: HarborTask) -> Limits | None:
        """The env's limits with the resources the task declares (cpus, memory, storage) put over them."""
        if task.cpus is None and task.memory_mb is None and task.storage_mb is None:
            return None
        limits = self.limits or Limits()
        changes: dict[str, Any] = {}
        if task.cpus is not None:
            changes["cpus"] = task.cpus
        if task.memory_mb is not None:
            changes["memory_mb"] = task.memory_mb
        if task.storage_mb is not None:
            changes["disk_mb"] = task.storage_mb
        return replace(limits, **changes)

    def _verifier_options(self, task: HarborTask, oracle: bool = False) -> dict[str, Any]:
        """What a grading sandbox gets at start on the local backend: /tests (read-only) and /solution bound,
        /logs/verifier a fresh tmpfs. Docker sandboxes get them uploaded (`stage_verifier`)."""
        if self.sandbox_backend != "local":
            return {}
        binds = {str(task.tests_dir): TESTS_PATH}
        if oracle and task.solution_dir is not None:
            binds[str(task.solution_dir)] = SOLUTION_PATH
        return {"ro_binds": binds, "scratch_dirs": [VERIFIER_DIR]}

    def _agent_seconds(self, task: HarborTask) -> float | None:
        return self.agent_timeout if self.agent_timeout is not None else task.agent_timeout

    def _prepare(self, task: HarborTask, sandbox: Sandbox) -> None:
        pass  # the image (or the empty work dir) is the starting state

    def _prompt(self, task: HarborTask) -> tuple[str, str]:
        user = USER_PROMPT.format(instruction=task.instruction.strip(), workdir=task.workdir)
        return system_prompt(self.toolbox), user

    def _grade(self, task: HarborTask, sandbox: Sandbox) -> Grade:
        sealed = self._sealed_checks(task)
        if isinstance(sealed, Grade):
            return sealed  # not graded: why is in it
        with self.new_sandbox(task, self._verifier_options(task)) as grader:
            carry_workdir(sandbox, grader, task.workdir)
            run = self._verify(grader, task)
        return self._paid(verifier_grade(run, sealed, self._mode()))

    # -- grading without an episode (gym-swe validate) -------------------------------------------------------
    def grade_oracle(self, task: HarborTask) -> Grade:
        """The task's own solution graded as an agent's work is (a second oracle run, against the checks the
        first one sealed: a verifier whose checks change from run to run fails here)."""
        if task.solution_dir is None:
            return Grade(tests=(), resolved=False, reward=0.0, error=f"{task.task_id}: no solution/solve.sh")
        sealed = self._sealed_checks(task)
        if isinstance(sealed, Grade):
            return sealed
        with self.new_sandbox(task, self._verifier_options(task, oracle=True)) as box:
            run = run_oracle(box, task, self.verifier_timeout)
        return self._paid(verifier_grade(run, sealed, self._mode()))

    def grade_unchanged(self, task: HarborTask) -> Grade:
        """The task's starting state graded (no change): a valid task earns nothing for it."""
        sealed = self._sealed_checks(task)
        if isinstance(sealed, Grade):
            return sealed
        with self.new_sandbox(task, self._verifier_options(task)) as box:
            run = self._verify(box, task)
        return self._paid(verifier_grade(run, sealed, self._mode()))

    # -- the parts of a grade --------------------------------------------------------------------------------
    def _verify(self, grader: Sandbox, task: HarborTask) -> VerifierRun:
        stage_verifier(grader, task)
        return run_verifier(grader, task, self.verifier_timeout)

    def _mode(self) -> str:
        return self.reward_mode if isinstance(self.reward_mode, str) else "binary"

    def _paid(self, grade: Grade) -> Grade:
        """Under ``integrity="protected"`` a grade nothing sealed becomes an error ("not graded")."""
        if self.integrity == "any" or grade.error is not None or grade.integrity == "sealed":
            return grade
        return replace(
            grade, resolved=False, reward=0.0, rejection=None,
            error="not graded: integrity='protected', and this task's verifier writes no checks.json whose "
            "values the oracle sealed (code under test can write the reward file itself)",
        )  # fmt: skip

    def _seal_key(self, task: HarborTask) -> tuple[str, ...]:
        image = "local"
        if self.sandbox_backend == "docker":
            from gym_swe.sandbox.docker import docker_client
            from gym_swe.tasks.harbor_images import harbor_image

            image = docker_client().images.get(harbor_image(task, log=logger.info)).id
        return (self.sandbox_backend, task.task_id, task.digest, image)

    def _sealed_checks(self, task: HarborTask) -> dict[str, Any] | Grade | None:
        """The oracle's checks for ``task`` (None under ``integrity="any"``); learned once per task and
        environment (kept here and under the gym_swe cache), or a not-graded `Grade` saying why they cannot
        be (an oracle that did not earn 1 here)."""
        if self.integrity == "any":
            return None
        key = self._seal_key(task)
        if key in self._seals:
            return self._seals[key]
        backend, task_id, digest, image = key
        path = cache_root() / "harbor-seals" / f"{task_id}-{digest[:16]}-{backend}-{image[-12:]}.json"
        if path.is_file():
            stored = json.loads(path.read_text(encoding="utf-8"))
            if isinstance(stored, dict) and isinstance(stored.get("checks"), dict):
                self._seals[key] = stored["checks"]
                return self._seals[key]
        with self.new_sandbox(task, self._verifier_options(task, oracle=True)) as box:
            run = run_oracle(box, task, self.verifier_timeout)
        if run.reward is None or run.reward < 1.0:
            why = run.problem or f"its reward was {run.reward:g}"
            return Grade(
                tests=(), resolved=False, reward=0.0, log=run.log,
                error=f"not graded: the task's oracle (solution/solve.sh) did not earn 1 here, so no check "
                f"can be sealed: {why}",
            )  # fmt: skip
        checks = run.checks or {}
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps({"task": task.task_id, "checks": checks}), encoding="utf-8")
        temporary.replace(path)
        self._seals[key] = checks
        return checks
