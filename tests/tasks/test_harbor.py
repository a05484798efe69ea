"""Harbor task folders read and checked (gym_swe/tasks/harbor.py): what a task.toml says, and every kind of bad
task failing where it loads, in one line naming the file and the field."""

from __future__ import annotations

import shutil
from pathlib import Path

import gymnasium
import pytest

import gym_swe  # noqa: F401  (registers Harbor-v0)
from gym_swe.errors import GymSweError, TaskFormatError
from gym_swe.tasks.harbor import BUNDLED_DIR, folder_digest, load_harbor_tasks, read_task

SQUARE = Path(__file__).resolve().parents[1] / "data" / "harbor" / "square"


@pytest.fixture
def task(tmp_path: Path) -> Path:
    """A copy of the square task to break."""
    folder = tmp_path / "tasks" / "square"
    shutil.copytree(SQUARE, folder)
    return folder


def test_a_task_folder_reads_as_harbor_says() -> None:
    task = read_task(SQUARE)
    assert (task.task_id, task.workdir, task.verifier_timeout) == ("square", "/app", 120.0)
    assert not task.allow_internet and not task.has_environment
    assert task.solution_dir == SQUARE / "solution" and task.metadata == {"difficulty": "easy"}
    assert "square(x)" in task.instruction


def test_a_folder_of_tasks_and_a_single_task_both_load(task: Path) -> None:
    shutil.copytree(task, task.parent / "square-two")
    assert load_harbor_tasks(task.parent).ids == ["square", "square-two"]
    assert load_harbor_tasks(task).ids == ["square"]


def test_the_bundled_tasks_all_read() -> None:
    if not any(BUNDLED_DIR.glob("*/task.toml")):
        pytest.skip("no bundled Harbor tasks yet")
    tasks = load_harbor_tasks("bundled")
    assert all(task.has_environment and task.solution_dir is not None for task in tasks)


def test_the_work_dir_is_the_tables_else_the_dockerfiles_last_workdir(task: Path) -> None:
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM base\nWORKDIR /src\nRUN true\nWORKDIR /src/app\n")
    assert read_task(task).workdir == "/src/app"
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml.replace("[environment]", '[environment]\nworkdir = "/work"'))
    assert read_task(task).workdir == "/work"


def test_the_network_is_there_only_when_the_task_asks(task: Path) -> None:
    toml = (task / "task.toml").read_text()
    (task / "task.toml").write_text(toml.replace("allow_internet = false", 'network_mode = "public"'))
    assert read_task(task).allow_internet
    (task / "task.toml").write_text(toml.replace("allow_internet = false", ""))
    assert not read_task(task).allow_internet  # Harbor's default is public; gym_swe's is none


def test_the_digest_follows_every_file(task: Path) -> None:
    before = folder_digest(task)
    (task / "tests" / "data.txt").write_text("x")
    assert folder_digest(task) != before


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new))


BAD_TASKS = [
    # (how the task is broken, what the one line must name)
    (lambda t: (t / "instruction.md").unlink(), ["instruction.md", "missing"]),
    (lambda t: (t / "tests" / "test.sh").unlink(), ["tests/test.sh", "missing"]),
    (lambda t: (t / "task.toml").write_text("[verifier\n"), ["task.toml", "not valid TOML"]),
    (lambda t: replace_in(t / "task.toml", "timeout_sec = 120", "timeout = 120"),
     ["task.toml", "verifier.timeout", "timeout_sec"]),
    (lambda t: (t / "task.toml").write_text('[verifier]\ntimeout_sec = 1\n[envirnoment]\ncpus = 1\n'),
     ["task.toml", "'envirnoment'", "environment"]),
    (lambda t: replace_in(t / "task.toml", "timeout_sec = 120", "timeout_sec = -5"),
     ["task.toml", "verifier.timeout_sec", "positive"]),
    (lambda t: replace_in(t / "task.toml", "allow_internet = false", "gpus = 1"), ["environment.gpus", "GPUs"]),
    (lambda t: replace_in(t / "task.toml", "allow_internet = false", 'network_mode = "allowlist"'),
     ["environment.network_mode", "allowlist"]),
    (lambda t: replace_in(t / "task.toml", "timeout_sec = 600", 'timeout_sec = 600\nuser = "agent"'),
     ["agent.user", "root"]),
    (lambda t: replace_in(t / "task.toml", "allow_internet = false", 'memory = "lots"'),
     ["environment.memory", "'2G'"]),
    (lambda t: replace_in(t / "task.toml", "allow_internet = false", 'workdir = "relative"'),
     ["environment.workdir", "absolute"]),
    (lambda t: replace_in(t / "task.toml", "timeout_sec = 120", 'timeout_sec = 120\nenvironment_mode = "aside"'),
     ["verifier.environment_mode", "'aside'", "separate"]),
    (lambda t: (replace_in(t / "task.toml", "timeout_sec = 120", 'timeout_sec = 120\nenvironment_mode = "separate"'),
                (t / "task.toml").write_text('artifacts = ["/logs/agent/out.txt"]\n' + (t / "task.toml").read_text())),
     ["artifact '/logs/agent/out.txt'", "environment_mode", "work dir (/app)"]),
    (lambda t: replace_in(t / "task.toml", "timeout_sec = 120", 'timeout_sec = 120\n[verifier.environment]\ncpus = 2'),
     ["verifier.environment", "fresh sandbox"]),
    (lambda t: (t / "instruction.md").write_text("  \n"), ["instruction.md", "empty"]),
    (lambda t: ((t / "environment").mkdir(), (t / "environment" / "docker-compose.yaml").write_text("x")),
     ["environment/docker-compose.yaml", "compose"]),
]  # fmt: skip


@pytest.mark.parametrize(("breakage", "named"), BAD_TASKS)
def test_a_bad_task_fails_at_make_in_one_line_naming_the_file_and_field(
    task: Path,
    breakage,
    named: list[str],  # type: ignore[no-untyped-def]
) -> None:
    breakage(task)
    with pytest.raises(TaskFormatError) as raised:
        read_task(task)
    message = str(raised.value)
    assert "\n" not in message and all(part in message for part in named), message
    with pytest.raises(GymSweError) as made:  # the same line from gymnasium.make, before any sandbox
        gymnasium.make("Harbor-v0", tasks=str(task), integrity="any")
    assert str(made.value) == message


def test_a_separate_verifier_of_the_work_dir_is_what_gym_swe_plays(task: Path) -> None:
    """``environment_mode = "separate"`` (a fresh copy of the environment, the artifacts carried over) is how
    gym_swe grades every Harbor task, for artifacts in the work dir (gym_swe's exports declare theirs so)."""
    replace_in(task / "task.toml", "timeout_sec = 120", 'timeout_sec = 120\nenvironment_mode = "separate"')
    (task / "task.toml").write_text(
        'artifacts = ["/app", {source = "/app/out"}]\n' + (task / "task.toml").read_text()
    )
    assert read_task(task).workdir == "/app"


def test_a_path_that_is_not_a_task_says_what_harbor_v0_takes(tmp_path: Path) -> None:
    with pytest.raises(GymSweError, match="no such folder; Harbor-v0 takes 'bundled'"):
        gymnasium.make("Harbor-v0", tasks=str(tmp_path / "nowhere"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(GymSweError, match="not a Harbor task"):
        gymnasium.make("Harbor-v0", tasks=str(tmp_path / "empty"))
