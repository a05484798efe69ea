"""Run in a Python >= 3.12 environment holding verifiers with its ``harbor`` extra (not gym_swe's): play exported
Harbor task folders through verifiers' own Harbor taskset (``vf-eval harbor``: its taskset, its ``bash`` harness
in the task's container on its docker runtime, its interception server, its verifier step), a scripted policy's
bash commands per case, and print each case's reward as verifiers reports it.

    python harbor_vf_play.py TASKS_DIR CASES_JSON OUT_DIR

``CASES_JSON``: {"task folder name": {"case": [command, ...]}}. ``TASKS_DIR``'s task.toml files must name a
pullable ``[environment] docker_image`` (verifiers builds no Dockerfile). verifiers loads a Harbor dataset from
its cache, ``~/.cache/harbor/NAME``, where ``harbor download`` would have put it: the folder is linked there as
``NAME`` (with ``HOME`` pointed at a scratch folder, the real cache is left alone). One ``vf-eval`` run per case,
over the tasks that have that case, one rollout each. Offline, the task images must hold what verifiers' harness
needs in them (tests/integrations/verifiers_offline.py).
"""

import json
import subprocess
import sys
from pathlib import Path

from scripted_tool_calls import ScriptedToolCallServer

DATASET = "gym-swe-export"


def play(tasks: Path, names: list[str], scripts: dict[str, list[str]], out: Path) -> dict[str, dict]:
    """One ``vf-eval`` run over the task folders ``names``, the policy playing ``scripts`` (per instruction);
    each task's reward, trace error and tool outputs."""
    server = ScriptedToolCallServer(scripts)
    vf_eval = Path(sys.executable).with_name("vf-eval")
    command = [
        str(vf_eval), "harbor", "--env.taskset.dataset", DATASET, "--env.taskset.tasks", json.dumps(names),
        "--env.agent.runtime.type", "docker", "--env.agent.harness.id", "bash",
        "--model", "scripted", "--client.base-url", server.base_url, "--num-rollouts", "1",
        "--no-rich", "--no-push", "--output-dir", str(out),
    ]  # fmt: skip
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
    finally:
        server.close()
    if done.returncode != 0:
        raise SystemExit(f"vf-eval failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-5000:]}")
    (traces,) = out.glob("*/traces.jsonl")
    results = {}
    for line in traces.read_text().splitlines():
        episode = json.loads(line)
        (trace,) = episode["traces"]
        name = Path(episode["task"]["data"]["task_dir"]).name
        instruction = episode["task"]["data"]["prompt"].strip()
        results[name] = {
            "rewards": {key: value["score"] for key, value in trace["rewards"].items()},
            "errors": trace.get("errors"),
            "outputs": server.outputs.get(instruction, []),
        }
    return results


def main(tasks: str, cases_path: str, out: str) -> None:
    with open(cases_path) as file:
        cases: dict[str, dict[str, list[str]]] = json.load(file)
    cache = Path.home() / ".cache" / "harbor"
    cache.mkdir(parents=True, exist_ok=True)
    if not (cache / DATASET).exists():
        (cache / DATASET).symlink_to(Path(tasks).resolve(), target_is_directory=True)
    by_case: dict[str, dict[str, list[str]]] = {}
    for name, commands_by_case in cases.items():
        for case, commands in commands_by_case.items():
            by_case.setdefault(case, {})[name] = commands
    reported = {}
    for case, commands_by_task in by_case.items():
        scripts = {(Path(tasks) / name / "instruction.md").read_text().strip(): commands
                   for name, commands in commands_by_task.items()}  # fmt: skip
        played = play(Path(tasks), sorted(commands_by_task), scripts, Path(out) / case)
        for name, result in played.items():
            reported[f"{name}/{case}"] = result
    print(json.dumps(reported))


if __name__ == "__main__":
    main(*sys.argv[1:])
