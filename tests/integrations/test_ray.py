"""The Ray env pool on a real local Ray: episodes through the collector, an actor killed mid-episode, leaks.

One Ray session for the module (starting one costs seconds), its files under the repo's ignored .tmp/.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from gym_swe.errors import ConfigError
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import SamplingParams
from gym_swe.rollout.tiny import make_tiny_bpe_model
from tests.conftest import REPO_ROOT, require_bwrap, require_docker
from tests.rollout.conftest import MODELS
from tests.rollout.scripted import ScriptedGenerator

TURNS = [
    f"<tool_call>\n{json.dumps({'name': 'bash', 'arguments': {'command': 'ls # step 0'}})}\n</tool_call>",
    f"<tool_call>\n{json.dumps({'name': 'bash', 'arguments': {'command': 'cat solution.py # step 1'}})}\n</tool_call>",
    f"<tool_call>\n{json.dumps({'name': 'submit', 'arguments': {}})}\n</tool_call>",
]
TASKS = ["GymSwe/0", "GymSwe/1"]


@pytest.fixture(scope="module")
def ray_session() -> Iterator:
    ray = pytest.importorskip("ray")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    # Short: Ray's Unix sockets live under it, and a socket path may not pass 107 characters.
    temp = REPO_ROOT / ".tmp" / "ray"
    temp.mkdir(parents=True, exist_ok=True)
    # docker_slot: the custom resource the README's cluster gives its Docker nodes.
    ray.init(num_cpus=2, resources={"docker_slot": 2}, _temp_dir=str(temp), include_dashboard=False,
             logging_level="WARNING")  # fmt: skip
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def tokenizer():  # type: ignore[no-untyped-def]
    transformers = pytest.importorskip("transformers")
    from gym_swe.rollout.tiny import make_tiny_bpe_tokenizer

    path = make_tiny_bpe_tokenizer(MODELS)
    return transformers.AutoTokenizer.from_pretrained(str(path))


def run(pool, generator, tasks=TASKS, samples: int = 2):  # type: ignore[no-untyped-def]
    return collect(pool, generator, tasks, samples_per_task=samples, sampling=SamplingParams(max_tokens=256))


def containers(**labels: str) -> list:
    from gym_swe.sandbox.docker import docker_client

    wanted = [f"{key}={value}" for key, value in labels.items()]
    return docker_client().containers.list(all=True, filters={"label": wanted})


def workspaces_of(pid: int) -> list[Path]:
    from gym_swe.sandbox.local import WORKSPACE_PREFIX, workspace_root

    return list(workspace_root().glob(f"{WORKSPACE_PREFIX}{pid}-*"))


def test_the_pool_runs_episodes_through_the_collector(ray_session, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    from gym_swe.integrations.ray import RayEnvPool

    with RayEnvPool("CodeDebug-v0", num_envs=4, envs_per_actor=2, num_cpus=0.5) as pool:
        assert len(pool) == 4 and len(pool.actors) == 2
        trajectories = run(pool, ScriptedGenerator(tokenizer, TURNS))
        pids = [member.where["pid"] for member in pool._members]
    assert [(t.task_id, t.sample_index) for t in trajectories] == [
        (task, i) for task in TASKS for i in range(2)
    ]
    for trajectory in trajectories:
        assert not trajectory.failed, trajectory.error
        assert trajectory.env_id == "CodeDebug-v0"
        assert trajectory.end_reason == "submitted" and trajectory.grade is not None
        assert len(trajectory.turns) == 3 and trajectory.rerender_matches
    assert pids[0] != pids[1] and os.getpid() not in pids  # the envs ran in the actors' processes
    for pid in pids:
        assert not workspaces_of(pid)


def test_a_handle_is_an_episode_env_that_steps_as_the_local_env_does(ray_session) -> None:  # type: ignore[no-untyped-def]
    """The actor ships only the messages a handle lacks; what the caller gets is what a local env gives."""
    require_bwrap()
    import gymnasium

    from gym_swe.integrations.ray import RayEnvPool
    from tests.rollout.test_episode_env import assert_is_episode_env

    local = gymnasium.make("CodeDebug-v0", max_turns=10)
    with RayEnvPool("CodeDebug-v0", {"max_turns": 10}, num_envs=1, num_cpus=0.5, health_check_s=0) as pool:
        handle = pool[0]
        assert_is_episode_env(handle)
        assert handle.spec.id == "CodeDebug-v0" and handle.done and handle.messages == []
        for env in (local, handle):
            env.reset(options={"task_id": TASKS[0]})
        assert_is_episode_env(handle)
        assert not handle.done and handle.messages == local.unwrapped.messages
        for action in TURNS[:2]:
            here, there = local.step(action), handle.step(action)
            assert there[:4] == here[:4]
            assert there[4]["messages"] == here[4]["messages"] == handle.messages
            assert there[4] == here[4]
            assert not handle.done
        ended_here, ended_there = local.unwrapped.truncate("budget"), handle.truncate("budget")
        assert ended_there["messages"] == ended_here["messages"] == handle.messages
        assert len(handle.messages) == 6  # system, user, then two assistant turns and their tool results
        assert ended_there.keys() == ended_here.keys()
        assert handle.done and local.unwrapped.done
    local.close()


class KillingGenerator(ScriptedGenerator):
    """Kills one actor of the pool as it is asked for the second turn: its episodes are mid-way."""

    def __init__(self, tokenizer, pool, backend: str) -> None:  # type: ignore[no-untyped-def]
        super().__init__(tokenizer, TURNS)
        self.pool, self.backend, self.victim = pool, backend, None
        self.labels: list[dict] = []

    def generate(self, prompts, params):  # type: ignore[no-untyped-def]
        if self.calls == 1 and self.victim is None:
            import ray

            from gym_swe.integrations.ray import ACTOR_LABEL

            self.victim = self.pool._members[0]
            if self.backend == "docker":
                self.labels = [c.labels for c in containers(**{ACTOR_LABEL: self.victim.name})]
            ray.kill(self.victim.actor, no_restart=True)
            while True:  # ray.kill returns at once; wait for the death, so that no step of it gets through
                try:
                    ray.get(self.victim.actor.ping.remote(), timeout=60)
                except ray.exceptions.RayActorError:
                    break
                time.sleep(0.05)
        return super().generate(prompts, params)


@pytest.mark.parametrize("sandbox_backend", ["local", "docker"], indirect=True)
def test_an_actor_killed_mid_episode_is_replaced_reported_and_reaped(  # type: ignore[no-untyped-def]
    ray_session, tokenizer, sandbox_backend: str
) -> None:
    from gym_swe.integrations.ray import ACTOR_LABEL, EPISODE_LABEL, RUN_LABEL, RayEnvPool

    pool = RayEnvPool(
        "CodeDebug-v0", {"sandbox": sandbox_backend}, num_envs=4, envs_per_actor=2, num_cpus=0.5
    )
    with pool:
        generator = KillingGenerator(tokenizer, pool, sandbox_backend)
        trajectories = run(pool, generator)
        victim = generator.victim
        failed = [t for t in trajectories if t.failed]
        # The killed actor's two episodes come back failed, with the reason; the other two are unharmed.
        assert len(failed) == 2, [t.error for t in trajectories]
        for trajectory in failed:
            assert trajectory.end_reason == "env_error"
            assert "EnvActorDied" in trajectory.error and victim.name in trajectory.error
        assert all(t.end_reason == "submitted" for t in trajectories if not t.failed)
        assert len(pool.replaced) == 1 and pool._members[0] is not victim

        removed = pool.wait_reaped()
        if sandbox_backend == "docker":
            # One container per episode of the victim, labelled with the run and its own episode.
            assert len(generator.labels) == 2
            assert all(labels[RUN_LABEL] == pool.run_id for labels in generator.labels)
            assert len({labels[EPISODE_LABEL] for labels in generator.labels}) == 2
            assert len([r for r in removed if r.startswith("container")]) == 2
            assert not containers(**{ACTOR_LABEL: victim.name})
        assert not workspaces_of(victim.where["pid"])

        # The heir serves its envs: the same pool plays a full round again.
        again = run(pool, ScriptedGenerator(tokenizer, TURNS), tasks=TASKS[:1], samples=4)
        assert all(not t.failed and t.end_reason == "submitted" for t in again), [t.error for t in again]
        pids = [member.where["pid"] for member in pool._members if member.where]
    # Nothing leaks: no container of the run, no workspace of its actors, no actor left alive.
    if sandbox_backend == "docker":
        assert not containers(**{RUN_LABEL: pool.run_id})
    for pid in pids:
        assert not workspaces_of(pid)
    alive = {a["name"] for a in ray_session.util.list_named_actors(all_namespaces=True)}
    assert not [name for name in alive if pool.run_id in name]


def test_deadline_truncates_and_health_checks_replace_a_dead_idle_actor(ray_session, tokenizer) -> None:  # type: ignore[no-untyped-def]
    require_bwrap()
    from gym_swe.integrations.ray import RayEnvPool

    with RayEnvPool(
        "CodeDebug-v0", num_envs=1, num_cpus=0.5, episode_timeout_s=0.01, health_check_s=0.2
    ) as pool:
        (trajectory,) = run(pool, ScriptedGenerator(tokenizer, TURNS), tasks=TASKS[:1], samples=1)
        # Past its deadline the episode ends at the next step, graded like one cut at max_turns.
        assert not trajectory.failed and trajectory.truncated
        assert trajectory.end_reason == "episode_deadline" and trajectory.grade is not None

        ray_session.kill(pool.actors[0], no_restart=True)  # between episodes: no episode to lose
        waited = 0.0
        while not pool.replaced and waited < 60:
            time.sleep(0.1)
            waited += 0.1
        assert pool.replaced and "died" in pool.replaced[0]
        pool.episode_timeout_s = None
        (again,) = run(pool, ScriptedGenerator(tokenizer, TURNS), tasks=TASKS[:1], samples=1)
        assert not again.failed and again.end_reason == "submitted"


def test_resources_the_cluster_lacks_are_refused_by_name(ray_session) -> None:  # type: ignore[no-untyped-def]
    from gym_swe.integrations.ray import RayEnvPool

    with pytest.raises(ConfigError, match=r"'gpu_slot'.*it has \[.*'docker_slot'.*ray start --resources"):
        RayEnvPool("CodeDebug-v0", num_envs=1, resources={"gpu_slot": 1})
    with pytest.raises(ConfigError, match="envs_per_actor must be a positive int"):
        RayEnvPool("CodeDebug-v0", num_envs=1, envs_per_actor=0)


def test_the_trainer_runs_its_rollouts_through_the_pool(ray_session, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """trainers/grpo.py --ray_address: one step on CodeDebug-v0 with its envs in actors of this module's Ray."""
    require_bwrap()
    from gym_swe.rollout.trajectory import load_jsonl
    from tests.trainers.runs import metrics, train

    address = ray_session.get_runtime_context().gcs_address
    out = train("--env", "CodeDebug-v0", "--model", str(make_tiny_bpe_model(MODELS)), "--steps", "1",
                "--tasks_per_step", "1", "--group_size", "2", "--max_turns", "2", "--max_new_tokens", "8",
                "--eval_every", "0", "--output_dir", str(tmp_path), "--run_name", "ray",
                "--ray_address", address)  # fmt: skip
    assert f"envs: 2 in 1 Ray actors at {address}" in out
    (row,) = metrics(tmp_path / "ray")
    assert row["rollout/failed"] == 0.0 and row["rollout/turns"] > 0
    trajectories = load_jsonl(tmp_path / "ray" / "trajectories" / "step_0.jsonl")
    assert len(trajectories) == 2 and all(t.env_id == "CodeDebug-v0" and t.grade for t in trajectories)
    run_id = out.split("(run ", 1)[1].split(")", 1)[0]
    alive = {a["name"] for a in ray_session.util.list_named_actors(all_namespaces=True)}
    assert not [name for name in alive if run_id in name]  # the trainer closed its pool


def test_an_address_where_no_cluster_answers_is_one_clear_error() -> None:
    code = "from gym_swe.integrations.ray import connect\nconnect('127.0.0.1:1')"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "ConfigError: no Ray cluster answers at '127.0.0.1:1'" in done.stderr.splitlines()[-1]


def test_the_readme_snippet_runs_on_this_cluster(ray_session, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """As written, but for the model (a tiny random one) and the address (this module's Ray)."""
    require_docker()
    from tests.test_readme import MODEL_PLACEHOLDER, snippet

    code = snippet("Scale out with Ray")
    assert code.count(MODEL_PLACEHOLDER) == 1 and code.count('ray.init(address="auto")') == 1
    code = code.replace(MODEL_PLACEHOLDER, repr(str(make_tiny_bpe_model(MODELS))))
    code = code.replace(
        'ray.init(address="auto")', f"ray.init(address={ray_session.get_runtime_context().gcs_address!r})"
    )
    script = tmp_path / "snippet.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.splitlines()[-1] == "4 []"  # four episodes, none failed
