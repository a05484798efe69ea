"""`gym-swe tasks export --format harbor`: exported folders played the Harbor way with real docker (build,
the agent's commands as its user, tests/ uploaded after, test.sh as root) give the reward gym_swe's own env
gives the same commands; and what an agent could try against a verifier in its own container earns 0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import gymnasium
import pytest
import tomllib

import gym_swe  # noqa: F401
from gym_swe.tasks.functions import load_function_tasks
from tests.conftest import require_docker
from tests.integrations.harbor_play import (
    CODEDEBUG_ID,
    SWE_ID,
    docker,
    export,
    export_examples,
    play,
    remove_images,
)

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    require_docker()
    yield export_examples(tmp_path_factory.mktemp("harbor"))
    remove_images()


def test_folder_holds_what_harbor_reads(exported: Path) -> None:
    import tomllib

    for name in ("GymSwe__0", SWE_ID):
        task = exported / name
        for part in (
            "instruction.md",
            "task.toml",
            "environment/Dockerfile",
            "tests/test.sh",
            "solution/solve.sh",
        ):
            assert (task / part).is_file(), part
        config = tomllib.loads((task / "task.toml").read_text())
        assert config["environment"]["allow_internet"] is False and config["agent"]["user"] == "agent"
    env = gymnasium.make("CodeDebug-v0").unwrapped
    instruction = (exported / "GymSwe__0" / "instruction.md").read_text().strip()
    prompt = env.opening_messages(CODEDEBUG_ID)[1]["content"].strip()  # but for submit, a tool Harbor lacks
    assert "submit" not in instruction and instruction == prompt.replace(
        "call submit.", "stop: the work dir is graded as you leave it."
    )
    assert "FROM gym-swe-base:latest" in (exported / "GymSwe__0/environment/Dockerfile").read_text()
    assert f"FROM gym-swe-task:{SWE_ID}" in (exported / SWE_ID / "environment/Dockerfile").read_text()


def gym_swe_reward(env_id: str, task_id: str, commands: list[str]) -> float:
    """gym_swe's own grade of the same commands: its env on the docker sandbox, each a bash call, then submit."""
    env = gymnasium.make(env_id, sandbox="docker")
    try:
        env.reset(options={"task_id": task_id})
        for command in commands:
            env.step(
                f"<tool_call>{json.dumps({'name': 'bash', 'arguments': {'command': command}})}</tool_call>"
            )
        _, reward, terminated, _, info = env.step(
            '<tool_call>{"name": "submit", "arguments": {}}</tool_call>'
        )
        assert terminated and info["grade"]["error"] is None, info["grade"]
        return float(reward)
    finally:
        env.close()


def codedebug_wrong() -> str:
    task = load_function_tasks("bundled").get(CODEDEBUG_ID)
    # the last run appended, but without its count: half a fix
    wrong = task.buggy_code.replace(
        "    return ''.join(out)", "    out.append(prev)\n    return ''.join(out)"
    )
    assert wrong != task.buggy_code
    return f"cat > solution.py <<'EOF'\n{wrong}EOF"


SWE_WRONG = (
    "sed -i 's/0, self.prerelease)/0, tuple(str(p) for p in self.prerelease))/' semverkit/version.py "
    "&& grep -q 'str(p) for p' semverkit/version.py"
)  # sorts identifiers as text: no more TypeError, but "11" before "2"


@pytest.mark.parametrize("name, env_id, task_id", [("GymSwe__0", "CodeDebug-v0", CODEDEBUG_ID),
                                                  (SWE_ID, "SWEGym-v0", SWE_ID)])  # fmt: skip
def test_gold_none_and_wrong_as_gym_swe_grades_them(
    exported: Path, name: str, env_id: str, task_id: str
) -> None:
    task = exported / name
    gold = (task / "solution" / "solve.sh").read_text()
    wrong = codedebug_wrong() if env_id == "CodeDebug-v0" else SWE_WRONG
    cases = {"gold": ([gold], 1.0), "none": ([], 0.0), "wrong": ([wrong], 0.0)}
    for case, (commands, expected) in cases.items():
        played = play(task, commands)
        assert played.reward == expected, (case, played.grade)
        assert gym_swe_reward(env_id, task_id, commands) == played.reward, case
    if env_id == "SWEGym-v0":
        assert played.grade["integrity"] == "sealed"


def test_with_build_an_swe_task_s_seals_are_learned_once_at_export(tmp_path: Path) -> None:
    """``--build``: the export learns the task's sealed checks in a container of the built image, by the
    verifier's own code, and keeps them in tests/task.json; a verification then grades at once, and grades as
    gym_swe does (the sealed checks in use: the grade says "sealed")."""
    require_docker()
    done = export(tmp_path, "--format", "harbor", "--env", "SWEGym-v0", "--out", str(tmp_path / "out"),
                  "--task-id", SWE_ID, "--build")  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    task = tmp_path / "out" / SWE_ID
    spec = json.loads((task / "tests" / "task.json").read_text())
    assert spec["sealed"] and isinstance(spec["inputs"], dict)
    tag = tomllib.loads((task / "task.toml").read_text())["environment"]["docker_image"]
    try:
        gold = (task / "solution" / "solve.sh").read_text()
        for case, commands, expected in (
            ("gold", [gold], 1.0),
            ("none", [], 0.0),
            ("wrong", [SWE_WRONG], 0.0),
        ):
            played = play(task, commands)
            assert played.reward == expected, (case, played.grade)
            assert played.grade["integrity"] == "sealed", (case, played.grade)
    finally:
        docker("rmi", "-f", tag, check=False)


def test_solve_sh_is_the_oracle(exported: Path) -> None:
    for name in ("GymSwe__0", SWE_ID):
        assert play(exported / name, solve=True).reward == 1.0


# -- attacks: the agent has read gym_swe and this export ----------------------------------------------------
LINGER = """nohup setsid bash -c '
while :; do
  if [ -r /tests/task.json ]; then
    python3 -c "import json; t = json.load(open(\\"/tests/task.json\\"))[\\"task\\"];
open(\\"/workspace/solution.py\\", \\"w\\").write(t[\\"prompt\\"] + t[\\"canonical_solution\\"])"
  fi
  for f in reward.txt reward.json; do echo 1 > /logs/verifier/$f 2>/dev/null; done
  echo "{\\"reward\\": 1}" > /logs/verifier/reward.json 2>/dev/null
  sleep 0.01
done' >/dev/null 2>&1 &
sleep 0.5"""


def test_a_process_left_running_cannot_read_the_tests_or_write_the_reward(exported: Path) -> None:
    # however loaded the machine: wait (up to 60 s) for the lingering loop to have written its reward
    alive = ("for i in $(seq 300); do [ -s /logs/verifier/reward.txt ] && break; sleep 0.2; done; "
             "pgrep -u agent -c bash; cat /logs/verifier/reward.txt")  # fmt: skip
    played = play(exported / "GymSwe__0", [LINGER], probe=alive)
    count, written = played.before.split()
    assert int(count) >= 1 and written == "1"  # it ran, and wrote its reward, up to the moment tests came
    assert played.reward == 0.0 and played.files == ["grade.json", "reward.txt"], played.grade


FORGER = """
import json, os
for path in ("/tests/task.json", "/logs/verifier/reward.txt", "/logs/verifier/reward.json"):
    try:
        if path.startswith("/tests"):
            gold = json.load(open(path))["task"]["patch"]
            open("/tmp/stolen", "w").write(gold)
        else:
            open(path, "w").write('{"reward": 1}' if path.endswith("json") else "1")
    except OSError:
        pass
"""


def test_code_under_test_cannot_read_the_tests_nor_write_the_reward(exported: Path) -> None:
    """The module under test, imported by the graded tests, tries to read /tests and write the reward."""
    forge = f"cat >> semverkit/__init__.py <<'EOF'\n{FORGER}EOF"
    played = play(exported / SWE_ID, [forge])
    assert played.reward == 0.0 and played.files == ["grade.json", "reward.txt"], played.grade
    honest = play(exported / SWE_ID, [forge, (exported / SWE_ID / "solution/solve.sh").read_text()])
    assert honest.reward == 1.0, honest.grade  # the same module with the fix: its attempts change nothing


def test_a_planted_conftest_is_dropped_as_the_env_drops_it(exported: Path) -> None:
    conftest = (
        "cat > tests/conftest.py <<'EOF'\nimport pytest\n@pytest.hookimpl(hookwrapper=True)\n"
        "def pytest_runtest_makereport(item, call):\n    outcome = yield\n    outcome.get_result().outcome = 'passed'\nEOF"
    )
    played = play(exported / SWE_ID, [conftest])
    assert played.reward == 0.0 and "dropped tests/conftest.py" in played.grade["log"], played.grade
    assert gym_swe_reward("SWEGym-v0", SWE_ID, [conftest]) == 0.0
