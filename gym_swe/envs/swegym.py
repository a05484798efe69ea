"""SWEGym-v0: resolve a repository issue (SWE-bench / SWE-Gym style)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from gym_swe.envs.base import ToolEnv, system_prompt
from gym_swe.errors import ConfigError, TaskRefused, unknown_name
from gym_swe.grading import seals
from gym_swe.grading.base import Grade
from gym_swe.grading.calibration import calibrate, probe_inputs, protection
from gym_swe.grading.changes import Entry, manifest, take_diff
from gym_swe.grading.diffs import protection_reason, split_diff
from gym_swe.grading.environment import Environment, probe_environment
from gym_swe.grading.repository import grade_repository
from gym_swe.grading.runners import runner_named
from gym_swe.sandbox import Sandbox
from gym_swe.sandbox.local import SOURCE_MODES
from gym_swe.tasks.base import TaskSet
from gym_swe.tasks.environments import environment_dir, logger, prepare_environment
from gym_swe.tasks.images import stripped_image
from gym_swe.tasks.repos import RepoSource
from gym_swe.tasks.swe import (
    CONDA_PATH,
    IMAGE_NAMINGS,
    SWETask,
    docker_image,
    load_swe_tasks,
    uses_conda_testbed,
    without_tests,
)

WORKDIR = "/testbed"
CALIBRATION_TRIES = 3
"""Grades of a task that may calibrate its sealed checks before an env gives up on them (decoys alone)."""
INTEGRITY_LEVELS = ("protected", "sealed", "any")
PRISTINE_CACHE_SIZE = 64
"""Tasks whose pristine grading state (the probe, the manifest) an env keeps, most recently graded first."""

USER_PROMPT = """<issue>
{problem_statement}
</issue>
{hints}
The repository that has this issue is checked out at {workdir}, at the commit where the issue was reported. \
Change the source code so that the issue is resolved.

- Find the cause before you change anything: read the code, and reproduce the problem with a small script.
- Do not modify or add tests, and do not change test configuration (conftest.py, pytest.ini, setup.cfg, \
pyproject.toml, tox.ini): changes to them are ignored when your work is graded, by tests you cannot see.
- Do not commit: your changes to the working tree are what is graded.
- When the issue is resolved, call submit."""

HINTS = """
Hints from the maintainers:
<hints>
{hints_text}
</hints>
"""


class SWEGymEnv(ToolEnv):
    """Resolve a GitHub-style issue in a real repository; graded by its FAIL_TO_PASS / PASS_TO_PASS tests.

    ## Description
    Each episode is one task of a repository: an issue as a user filed it, and the repository at
    ``/testbed`` checked out at the commit where the issue was reported (its history up to there, nothing
    later). The agent explores, reproduces, edits the source and calls ``submit``. Its diff is then graded
    in a fresh sandbox: changes to protected paths (tests, test configuration, start-up hooks) are dropped,
    the hidden test patch is applied, and the task's FAIL_TO_PASS and PASS_TO_PASS tests run, with the
    checks whose expectation is a literal or an exception sealed (held outside the run) and decoys beside
    the other FAIL_TO_PASS tests (`gym_swe.grading.seals`, `gym_swe.grading.decoys`). The first grade of a
    task in an environment first runs its tests once with its gold patch, to learn which checks can be
    sealed (kept under the gym_swe cache). ``info["grade"]["integrity"]`` says what stood between a forged
    test report and the reward: ``"sealed"`` or ``"decoys"`` (README, Security).

    ## Action Space
    Text (`CodeText`): the model's turn with tool calls, or an OpenAI-format assistant message dict with
    ``tool_calls``. Tools: ``bash(command, timeout?)``, ``str_replace_editor(command, path, ...)``,
    ``submit()``; schemas in ``info["tools"]``; the accepted call formats are those of `CodeDebugEnv`
    (see `gym_swe.tools.parsing`). A malformed call is an observation, not an error.

    ## Observation Space
    Text (`CodeText`): the prompt after ``reset`` (instructions, the tool list, the issue, and with
    ``hints=True`` the maintainers' hints), then each step's tool output (bounded). Never the gold patch,
    the test patch, the grader's output or the reward.

    ## Rewards
    0 on every step but the last (minus ``format_penalty`` for unparseable turns, when set). On the last
    step: 1.0 when every FAIL_TO_PASS and PASS_TO_PASS test passes (``reward="binary"``), the share of them
    that pass (``"fraction"``), or ``reward(grade, history)`` for a callable.

    ## Starting State
    ``/testbed``: the repository at base_commit, on every backend. Local sandboxes get a copy-on-write view
    of a prepared checkout (with what the environment's install commands built) and the task's prepared
    environment (a virtual environment, read-only, first on PATH); docker sandboxes run the task's image.

    ## Episode End
    Terminated after ``submit``; truncated at ``max_turns`` (50; ``gymnasium.make``'s ``max_episode_steps``
    sets the same limit, see `gym_swe.envs.limits`), the context budget, or a dead sandbox
    (``info["error"]``). The final state is graded either way; ``info["grade"]`` has per-test outcomes, with
    ``groups`` naming FAIL_TO_PASS / PASS_TO_PASS. A sandbox whose memory the agent's own commands used up
    (its executor taken by the OOM killer) is the agent's failure instead: terminated, scored 0,
    ``end_reason="out_of_memory"``, no ``info["error"]``.

    ## Arguments
    - ``tasks``: ``"bundled"`` (12 tasks over 3 repositories written for gym_swe, offline), ``"swe-gym"``,
      ``"swe-gym-lite"``, ``"swe-bench-lite"``, ``"swe-bench-verified"``, or a .jsonl/.parquet path.
    - ``sandbox``: ``"local"`` or ``"docker"``; ``sandbox_options``, ``limits`` as for every env.
    - ``repo_source`` (local): where repositories come from: a directory of mirrors, or a mapping
      ``{"owner/name": url_or_path}``; the bundled repositories by default.
    - ``source_mode`` (local): ``"auto"`` (copy-on-write where possible), ``"overlay"`` or ``"copy"``.
    - ``image`` (docker): an image name for every task, or a mapping ``{instance_id: image}``;
      ``image_naming``: ``"auto"``, ``"swe-gym"``, ``"swe-bench"`` or ``"gym-swe"`` (see `docker_image`);
      ``strip_history`` (True): official images hold whole repositories, whose later commits contain the
      fix, so their history after base_commit is removed once per image (a derived, cached image).
    - ``hints``: include the maintainers' hints in the prompt (False).
    - ``exclude_tests``: test ids (exactly as in the records) taken out of every task's FAIL_TO_PASS /
      PASS_TO_PASS: tests that cannot pass where the tasks run (a record's own ``exclude_tests`` field does
      the same for one task). Ids that are log fragments (``'[100%]'``) are dropped at load, with a warning.
    - ``environment`` (a record field, for local sandboxes): how the task's venv is made, e.g.
      ``{"python": "3.9", "packages": ["pytest==7.4.4"], "install": ["pip install -e ."],
      "env": {"KEY": "value"}}``; see `gym_swe.tasks.swe.Environment` and docs/swebench.md. Without it: the
      system's python3, a pinned pytest, no install step, and ``SETUPTOOLS_SCM_PRETEND_VERSION`` set to the
      record's ``version``. ``gym-swe prepare`` builds it ahead of time.
    - ``test_timeout``: seconds the graded test run may take (1800).
    - ``integrity``: ``"protected"`` (default) pays only grades that a forged test report cannot earn but by
      chance of at most 2% (``Grade.integrity`` "sealed" or "decoys", ``Grade.chance``): any other grade
      ("unprotected") becomes ``Grade.error`` ("not graded"), which trainers leave out; ``"sealed"`` pays
      only "sealed" grades; ``"any"`` pays every grade, unprotected ones included (code that forges the
      report and tells a test from its decoys can earn those).
    - ``max_turns`` (50), ``reward``, ``format_penalty``, ``max_observation_chars``, ``max_context_chars``,
      ``max_tool_calls`` (32), ``max_step_seconds`` (600; see `gym_swe.envs.step_bound`), ``tools``,
      ``tool_options``, ``render_mode``.

    ## Version History
    - v0: first version.
    """

    def __init__(
        self,
        hints: bool = False,
        repo_source: str | Path | Mapping[str, str] | None = None,
        source_mode: str = "auto",
        image: str | Mapping[str, str] | None = None,
        image_naming: str = "auto",
        strip_history: bool = True,
        test_timeout: float = 1800.0,
        exclude_tests: Sequence[str] = (),
        integrity: str = "protected",
        **kwargs: Any,
    ) -> None:
        if integrity not in INTEGRITY_LEVELS:
            raise ConfigError(unknown_name("integrity", integrity, INTEGRITY_LEVELS))
        if source_mode not in SOURCE_MODES:
            raise ConfigError(unknown_name("source_mode", source_mode, SOURCE_MODES))
        if image_naming not in IMAGE_NAMINGS:
            raise ConfigError(unknown_name("image_naming", image_naming, IMAGE_NAMINGS))
        if not isinstance(hints, bool):
            raise ConfigError(f"hints must be True or False, got {hints!r}")
        if not isinstance(test_timeout, (int, float)) or test_timeout <= 0:
            raise ConfigError(f"test_timeout must be a positive number of seconds, got {test_timeout!r}")
        if isinstance(exclude_tests, str) or not all(isinstance(name, str) for name in exclude_tests):
            raise ConfigError(f"exclude_tests must be a list of test ids, got {exclude_tests!r}")
        self.exclude_tests = tuple(exclude_tests)
        self.hints = hints
        self.repo_source = RepoSource(repo_source)
        self.source_mode = source_mode
        self.image = image
        self.image_naming = image_naming
        self.strip_history = bool(strip_history)
        self.test_timeout = float(test_timeout)
        self.integrity = integrity
        if integrity == "sealed" and kwargs.get("reward", "binary") != "binary":
            raise ConfigError(
                "integrity='sealed' needs reward='binary': a fraction (or your own reward) pays test by "
                "test, and a forged report raises the share of the tests that have no protective sealed check"
            )
        # Repository work takes more turns and a longer chat than fixing a function.
        kwargs.setdefault("max_turns", 50)
        kwargs.setdefault("max_context_chars", 800_000)
        super().__init__(**kwargs)  # the kwargs every env takes (ToolEnv): tasks, sandbox, reward, ...
        self._pristine: OrderedDict[tuple[str, ...], tuple[Environment, dict[str, Entry]]] = OrderedDict()
        self._sealable: dict[tuple[str, ...], Mapping[str, seals.Facts]] = {}
        self._inputs: dict[tuple[str, ...], Mapping[str, Any]] = {}
        self._failed_calibrations: dict[tuple[str, ...], int] = {}

    def _load_tasks(self, source: str) -> TaskSet[SWETask]:
        if not isinstance(source, str):
            raise ConfigError(f"tasks must be a source name or a file path, got {type(source).__name__}")
        tasks = load_swe_tasks(source)
        if not self.exclude_tests:
            return tasks
        known = {name for task in tasks for name in (*task.fail_to_pass, *task.pass_to_pass)}
        unknown = [name for name in self.exclude_tests if name not in known]
        if unknown:
            raise ConfigError(
                f"exclude_tests: {unknown} are not FAIL_TO_PASS or PASS_TO_PASS ids of any task in "
                f"{source!r}; give ids exactly as the records have them"
            )
        kept, refused = [], dict(tasks.refused)
        for task in tasks:
            try:
                kept.append(without_tests(task, self.exclude_tests))
            except TaskRefused as error:  # that task alone
                logger.warning("refused %s", error)
                refused[task.instance_id] = str(error)
        return TaskSet(kept, tasks.source, refused)

    def image_for(self, task: SWETask) -> str:
        if isinstance(self.image, str):
            return self.image
        if isinstance(self.image, Mapping) and task.instance_id in self.image:
            return self.image[task.instance_id]
        return docker_image(task, self.image_naming)

    def _sandbox_options(self, task: SWETask) -> dict[str, Any]:
        if self.sandbox_backend == "docker":
            image = self.image_for(task)
            if self.strip_history and not image.startswith(("gym-swe-task:", "gym-swe-stripped:")):
                image = stripped_image(task, image, log=logger.info)
            env = {"PATH": CONDA_PATH, "CONDA_DEFAULT_ENV": "testbed"} if uses_conda_testbed(image) else {}
            return {"image": image, "workdir": WORKDIR, "env": env}
        prepared = prepare_environment(task, self.repo_source)
        return {"workdir": WORKDIR, "source_mode": self.source_mode, **prepared.sandbox_options()}

    def _prepare(self, task: SWETask, sandbox: Sandbox) -> None:
        pass  # the checkout (local) or the image (docker) is the starting state

    def _prompt(self, task: SWETask) -> tuple[str, str]:
        hints = (
            HINTS.format(hints_text=task.hints_text.strip()) if self.hints and task.hints_text.strip() else ""
        )
        user = USER_PROMPT.format(
            problem_statement=task.problem_statement.strip(), hints=hints, workdir=WORKDIR
        )
        return system_prompt(self.toolbox), user

    def _grade(self, task: SWETask, sandbox: Sandbox) -> Grade:
        """The agent's changes are taken by comparing its workspace with the pristine one in the fresh grading
        sandbox (manifests the executors compute; no git of the agent's runs), then graded there."""
        mode = self.reward_mode if isinstance(self.reward_mode, str) else "binary"
        sealed = self._sealed_checks(task)  # the first grade of a task learns them from its gold patch
        with self.new_sandbox(task) as grader:
            environment, pristine = self._pristine_state(task, grader)
            test_paths = {path for part in split_diff(task.test_patch) for path in part.paths}
            runner_paths = runner_named(task.test_runner).protected

            def reason_to_drop(path: str, new: bool) -> str | None:
                return protection_reason(
                    path, test_paths, environment.shadowable, new=new, editable=environment.editable,
                    runner_paths=runner_paths,
                )  # fmt: skip

            taken = take_diff(sandbox, grader, pristine, WORKDIR, reason_to_drop)
            grade = grade_repository(
                grader, task, taken.diff, reward=mode, timeout=self.test_timeout, workdir=WORKDIR,
                environment=environment, pristine=pristine, sealed=sealed,
                inputs=self._inputs.get(self._seal_key(task), {}),
            )  # fmt: skip
        dropped = "".join(f"\ndropped {path}: {reason}" for path, reason in taken.dropped)
        grade = replace(grade, log=grade.log + dropped, diff=taken.diff)
        return self._paid(grade)

    def _paid(self, grade: Grade) -> Grade:
        """The grade as ``integrity`` pays it: one it does not pay becomes an error ("not graded")."""
        if grade.error is not None or grade.rejection is not None or not grade.integrity:
            return grade
        if self.integrity == "sealed" and grade.integrity != "sealed":
            why = "no FAIL_TO_PASS check of this task can be sealed against a forged test report"
        elif self.integrity == "protected" and grade.integrity == "unprotected":
            why = (
                f"its decoys leave a forged test report a chance of {grade.chance:.1%} (more than 2%), and "
                "no FAIL_TO_PASS check of it can be sealed"
            )
        else:
            return grade
        return replace(
            grade, resolved=False, reward=0.0, rejection=None,
            error=f"not graded: integrity={self.integrity!r}, and {why}",
        )  # fmt: skip

    def grade_diff(self, task: SWETask, diff: str) -> Grade:
        """Grade a diff for ``task`` in a fresh sandbox (also what `gym-swe validate` runs)."""
        mode = self.reward_mode if isinstance(self.reward_mode, str) else "binary"
        sealed = self._sealed_checks(task)  # a grade of the gold patch as any other: decoys and seals
        with self.new_sandbox(task) as grader:
            environment, pristine = self._pristine_state(task, grader)
            return grade_repository(
                grader, task, diff, reward=mode, timeout=self.test_timeout, workdir=WORKDIR,
                environment=environment, pristine=pristine, sealed=sealed,
                inputs=self._inputs.get(self._seal_key(task), {}),
            )  # fmt: skip

    def _seal_key(self, task: SWETask) -> tuple[str, ...]:
        source = self.image_for(task) if self.sandbox_backend == "docker" else str(environment_dir(task))
        return (self.sandbox_backend, task.instance_id, source)

    def _sealed_checks(self, task: SWETask) -> Mapping[str, seals.Facts]:
        """The checks of the task that can be sealed (`gym_swe.grading.seals`), learned once per task and
        environment from its gold patch and kept (here and on disk)."""
        if not seals.SEAL_CHECKS:
            return {}
        key = self._seal_key(task)
        if key not in self._sealable:
            self._calibrate(task)
        return self._sealable.get(key, {})

    def _calibrate(self, task: SWETask) -> None:
        """Learn which checks of the task can be sealed: from disk, else by grading its gold patch the
        calibrating way, then running its tests with no fix and those checks sealed, in another fresh sandbox,
        to learn which of them protect the reward (`gym_swe.grading.calibration.protection`), then the gold
        patch and no fix again, with copies of its tests whose last statement's literals changed, to learn
        which values decoys may take (`gym_swe.grading.calibration.probe_inputs`): four test runs, the first
        time a task is graded in an environment."""
        key = self._seal_key(task)
        stored = seals.stored(task, key)
        if stored is not None:
            self._sealable[key] = stored
            self._inputs[key] = seals.stored_inputs(task, key)
            return
        mode = self.reward_mode if isinstance(self.reward_mode, str) else "binary"
        with self.new_sandbox(task) as grader:
            environment, pristine = self._pristine_state(task, grader)
            grade, sealable = calibrate(
                grader, task, reward=mode, timeout=self.test_timeout, workdir=WORKDIR,
                environment=environment, pristine=pristine,
            )  # fmt: skip
        if grade.resolved:
            with self.new_sandbox(task) as unfixed:
                environment, pristine = self._pristine_state(task, unfixed)
                sealable = protection(
                    unfixed, task, sealable, timeout=self.test_timeout, workdir=WORKDIR,
                    environment=environment, pristine=pristine,
                )  # fmt: skip
            inputs = probe_inputs(
                lambda: self.new_sandbox(task), task, sealable, timeout=self.test_timeout, workdir=WORKDIR,
                environment=environment, pristine=pristine,
            )  # fmt: skip
            seals.store(task, key, sealable, inputs)
            self._sealable[key] = sealable
            self._inputs[key] = inputs
            return
        # A gold patch that did not resolve the task here (a timeout under load, a test that needs the
        # network) says nothing of what can be sealed: nothing is kept, and a later grade tries again, up
        # to CALIBRATION_TRIES times in all; then this env grades the task with decoys alone.
        self._failed_calibrations[key] = self._failed_calibrations.get(key, 0) + 1
        logger.warning("%s: its gold patch did not resolve it when calibrating sealed checks (%s)",
                       task.instance_id, grade.rejection or grade.error or "tests failed")  # fmt: skip
        if self._failed_calibrations[key] >= CALIBRATION_TRIES:
            self._sealable[key] = {}

    def _pristine_state(self, task: SWETask, grader: Sandbox) -> tuple[Environment, dict[str, Entry]]:
        """The probe of the task's python and the manifest of its pristine tree, taken in ``grader`` before
        anything changes there. Every grading sandbox of a task starts from the same tree and environment
        (the prepared checkout and venv, or the image), so they are taken once per task and kept: a group
        of samples of one task pays for them once."""
        source = self.image_for(task) if self.sandbox_backend == "docker" else str(environment_dir(task))
        key = (self.sandbox_backend, task.instance_id, source)
        if key in self._pristine:
            self._pristine.move_to_end(key)
            return self._pristine[key]
        runner = runner_named(task.test_runner)
        files = runner.test_files([*task.fail_to_pass, *task.pass_to_pass], task.test_patch)
        state = probe_environment(grader, WORKDIR, files, runner.needs_pytest), manifest(grader, WORKDIR)
        self._pristine[key] = state
        while len(self._pristine) > PRISTINE_CACHE_SIZE:
            self._pristine.popitem(last=False)
        return state
