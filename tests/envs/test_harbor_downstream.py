"""Harbor-v0 downstream, unchanged: the collector makes token-exact trajectories of it, `gym-swe serve` serves it
(the typed client plays it as the env in process does), and a task whose image does not build fails its own
episodes with the reason while the others of the collection go on."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium

import gym_swe  # noqa: F401  (registers Harbor-v0)
from gym_swe.rollout.collector import collect
from gym_swe.rollout.generators.base import SamplingParams
from tests.conftest import require_bwrap, require_docker
from tests.envs.test_harbor import DOCKERFILE, FIX, SQUARE, call
from tests.rollout.scripted import ScriptedGenerator
from tests.rollout.test_trajectories import load

# "step N" marks tell the scripted generator which turn a conversation is at (tests/rollout/scripted.py).
TURNS = [call("bash", command=f"{FIX} # step 0"), call("submit")]
SAMPLING = SamplingParams(max_tokens=256)


def test_the_collector_plays_harbor_tasks_into_trajectories_with_their_grade() -> None:
    require_bwrap()
    generator = ScriptedGenerator(load("tiny-bpe"), TURNS)
    trajectories = collect(
        lambda: gymnasium.make("Harbor-v0", tasks=str(SQUARE), max_turns=4), generator, ["square"],
        samples_per_task=2, sampling=SAMPLING, progress=False,
    )  # fmt: skip
    assert [t.reward for t in trajectories] == [1.0, 1.0]
    for trajectory in trajectories:
        assert trajectory.grade is not None and trajectory.grade["integrity"] == "sealed"
        assert len(trajectory.token_ids) == len(trajectory.loss_mask) and sum(trajectory.loss_mask) > 0


def test_a_served_harbor_env_plays_as_the_env_in_process() -> None:
    require_bwrap()
    from gym_swe.serve.client import ServedEnv
    from tests.serve.server import EnvServer

    local = gymnasium.make("Harbor-v0", tasks=str(SQUARE), max_turns=4)
    try:
        with (
            EnvServer("Harbor-v0", [f"tasks={SQUARE}", "max_turns=4"]) as server,
            ServedEnv(server.url) as served,
        ):
            assert served.task_ids() == ["square"]
            assert served.reset(options={"task_id": "square"}) == local.reset(options={"task_id": "square"})
            step = call("bash", command=FIX)
            assert served.step(step)[:4] == local.step(step)[:4]
            *_, there = served.step(call("submit"))
            *_, here = local.step(call("submit"))
            assert there["grade"]["reward"] == here["grade"]["reward"] == 1.0
            assert there["grade"]["integrity"] == "sealed"
    finally:
        local.close()


def test_a_task_whose_image_does_not_build_fails_its_episodes_and_the_others_go_on(tmp_path: Path) -> None:
    require_docker()
    root = tmp_path / "tasks"
    for name, dockerfile in (("square", DOCKERFILE), ("broken", "FROM gym-swe-base:latest\nRUN exit 7\n")):
        shutil.copytree(SQUARE, root / name)
        (root / name / "environment").mkdir()
        (root / name / "environment" / "Dockerfile").write_text(dockerfile)
    turns = [call("bash", command="sed -i 's/x + x/x * x/' square.py # step 0"), call("submit")]
    generator = ScriptedGenerator(load("tiny-bpe"), turns)
    trajectories = collect(
        lambda: gymnasium.make("Harbor-v0", tasks=str(root), sandbox="docker", max_turns=4), generator,
        ["broken", "square"], sampling=SAMPLING, progress=False,
    )  # fmt: skip
    broken, square = trajectories
    assert broken.error is not None and "environment/Dockerfile: the build failed" in broken.error, (
        broken.error
    )
    assert square.error is None and square.reward == 1.0
