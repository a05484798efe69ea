"""The real consumer: verifiers' Harbor taskset (``vf-eval harbor``: ``verifiers.v1.tasksets.harbor``, its bash
harness in the task's own container on its docker runtime, its interception server, its verifier step) plays
exported tasks with a scripted policy that calls tools the OpenAI way, and the reward it reports is gym_swe's
own grade of the same commands.

verifiers' ``harbor`` extra pins harbor 0.24 and needs Python >= 3.12, so it runs in an environment of its own
(``make .venv-vfharbor/.installed``; ``GYM_SWE_VFHARBOR_PYTHON`` names its python). Offline: what verifiers would
fetch at run time (its egress-control image, uv and its chat program's wheels in the task's container) is made
here from local images and wheels (tests/integrations/verifiers_offline.py).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import tomllib

from tests.conftest import _unavailable, require_docker
from tests.integrations.harbor_play import CODEDEBUG_ID, SWE_ID, docker, export_examples
from tests.integrations.test_harbor_export import SWE_WRONG, codedebug_wrong, gym_swe_reward
from tests.integrations.verifiers_offline import network_image, offline_copy

pytestmark = pytest.mark.docker
PLAYER = Path(__file__).with_name("harbor_vf_play.py")


def vfharbor_python() -> Path:
    # absolute, not resolved: a venv's python is a link out of it
    python = Path(os.environ.get("GYM_SWE_VFHARBOR_PYTHON", ".venv-vfharbor/bin/python")).absolute()
    if not python.is_file():
        _unavailable(
            "verifiers' Harbor environment (make .venv-vfharbor/.installed)",
            "GYM_SWE_REQUIRE_HARBOR",
            str(python),
        )
    return python


@pytest.fixture(scope="module")
def offline_tasks(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The exported CodeDebug and SWE folders (built: verifiers builds no Dockerfile), each naming an image
    derived from its own with what verifiers' harness needs offline; verifiers' network image."""
    python = vfharbor_python()
    require_docker()
    root = tmp_path_factory.mktemp("vfharbor")
    (root / "exported").mkdir()
    exported = export_examples(root / "exported", "--build")
    built = [task_image(folder) for folder in exported.iterdir()]
    network_image()
    derived: list[str] = []
    try:
        (root / "tasks").mkdir()
        yield offline_copy(exported, root / "tasks", python, root, derived)
    finally:
        for tag in [*derived, *built]:  # per run: each export's wheel makes new ones
            docker("rmi", "-f", tag, check=False)


def task_image(folder: Path) -> str:
    """The image a task folder's task.toml names."""
    return str(tomllib.loads((folder / "task.toml").read_text())["environment"]["docker_image"])


def bridge_gateway() -> str:
    return docker(
        "network", "inspect", "bridge", "--format", "{{(index .IPAM.Config 0).Gateway}}"
    ).stdout.strip()


def probe(host: str, port: int) -> str:
    """A command that tries a TCP connection to ``host:port`` and a DNS lookup of a host outside (Debian's
    mirror, which docker's bridge reaches here), and says whether each got through."""
    script = f"""import socket
try:
    socket.create_connection(({host!r}, {port}), timeout=5).close()
    print("host: reached")
except OSError as error:
    print("host: cut", type(error).__name__)
try:
    socket.getaddrinfo("deb.debian.org", 80)
    print("outside: reached")
except OSError as error:
    print("outside: cut", type(error).__name__)"""
    return f"python3 - <<'EOF'\n{script}\nEOF"


def play(tmp_path: Path, tasks: Path, cases: dict[str, dict[str, list[str]]]) -> dict[str, dict]:
    """``cases`` played through ``vf-eval harbor`` (tests/integrations/harbor_vf_play.py): per "task/case",
    verifiers' rewards, its trace's errors and what the agent's commands printed."""
    (tmp_path / "cases.json").write_text(json.dumps(cases))
    # HOME: verifiers reads a Harbor dataset from ~/.cache/harbor, where the player links the folder
    env = {**os.environ, "HOME": str(tmp_path / "home"), "PYTHONPATH": ""}
    done = subprocess.run(
        [str(vfharbor_python()), str(PLAYER), str(tasks), str(tmp_path / "cases.json"), str(tmp_path / "runs")],
        capture_output=True, text=True, env=env, timeout=2400,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def test_verifiers_reports_gym_swe_s_grade(tmp_path: Path, offline_tasks: Path) -> None:
    """Slow (a minute or more): three vf-eval runs (one per case, a container per rollout and one per separate
    verifier), then gym_swe's own grade of the same five command lists on its docker sandbox."""
    # a port of the host's, open to the containers' bridge: the agent's commands must not reach it
    listener = socket.create_server(("0.0.0.0", 0))
    listener.settimeout(0)
    reach = probe(bridge_gateway(), listener.getsockname()[1])
    swe_gold = (offline_tasks / SWE_ID / "solution" / "solve.sh").read_text()
    codedebug_gold = (offline_tasks / "GymSwe__0" / "solution" / "solve.sh").read_text()
    cases = {
        "GymSwe__0": {"gold": ["whoami", codedebug_gold], "none": ["whoami", reach],
                      "wrong": ["whoami", codedebug_wrong()]},
        SWE_ID: {"gold": ["whoami", swe_gold], "wrong": ["whoami", SWE_WRONG]},
    }  # fmt: skip
    try:
        reported = play(tmp_path, offline_tasks, cases)
        # the same probe from a container of the same image that verifiers has not cut off: it gets through
        image = task_image(offline_tasks / "GymSwe__0")
        uncut = docker("run", "--rm", "--network", "bridge", image, "bash", "-c", reach).stdout
    finally:
        listener.close()
    ids = {"GymSwe__0": ("CodeDebug-v0", CODEDEBUG_ID), SWE_ID: ("SWEGym-v0", SWE_ID)}
    for name, by_case in cases.items():
        env_id, task_id = ids[name]
        for case, commands in by_case.items():
            result = reported[f"{name}/{case}"]
            assert not result["errors"], (name, case, result)
            vf_reward = result["rewards"]["reward"]  # the task's reward.txt, under its reward_key
            assert vf_reward == (1.0 if case == "gold" else 0.0), (name, case, result)
            assert vf_reward == gym_swe_reward(env_id, task_id, commands), (name, case)
            # verifiers runs the agent's commands as the task's [agent] user
            assert result["outputs"][0].strip() == "agent", result["outputs"]
    cut = reported["GymSwe__0/none"]["outputs"][1]
    assert "host: reached" in uncut and "host: cut" in cut, (uncut, cut)
    if "outside: reached" in uncut:  # a machine whose containers resolve nothing outside has nothing to cut
        assert "outside: cut" in cut, cut


# -- attacks: the agent has read gym_swe, this export and verifiers ------------------------------------------
# verifiers stages a task's tests/ for a verifier in the agent's own container (Harbor's shared mode) by writing
# their tarball to /tmp/tests.tgz (as root, mode 644, in the /tmp the agent shares), untarring it into /tests,
# then running test.sh, whose first act is to kill the agent's processes. A process the agent left running read
# the fix out of the tarball in between and wrote it into the work dir: 1.0 for no fix (it did, before the export
# asked for a verifier box of its own, where nothing of the agent's runs).
TARBALL_READER = """nohup setsid python3 -c '
import io, json, tarfile, time
while True:
    try:
        with tarfile.open(fileobj=io.BytesIO(open("/tmp/tests.tgz", "rb").read())) as tar:
            task = json.load(tar.extractfile("task.json"))["task"]
        open("/workspace/solution.py", "w").write(task["prompt"] + task["canonical_solution"])
        break
    except Exception:
        time.sleep(0.002)
' >/dev/null 2>&1 &
sleep 0.5; pgrep -u agent -c python3"""


def test_a_process_left_running_cannot_take_the_fix_from_verifiers_staging(
    tmp_path: Path, offline_tasks: Path
) -> None:
    """Slow under load (near a minute): two vf-eval runs, each an agent's container and a verifier's."""
    gold = (offline_tasks / "GymSwe__0" / "solution" / "solve.sh").read_text()
    cases = {"attack": ["whoami", TARBALL_READER], "honest": ["whoami", TARBALL_READER, gold]}
    reported = play(tmp_path, offline_tasks, {"GymSwe__0": cases})
    attack, honest = reported["GymSwe__0/attack"], reported["GymSwe__0/honest"]
    assert int(attack["outputs"][1]) >= 1  # it was running when the agent ended
    assert attack["rewards"]["reward"] == 0.0, attack
    assert honest["rewards"]["reward"] == 1.0, honest  # the same process beside a real fix changes nothing
