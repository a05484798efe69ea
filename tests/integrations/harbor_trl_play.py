"""Run in a Python >= 3.12 environment holding trl and harbor (not gym_swe's): play exported Harbor task folders
through TRL's own `trl.experimental.harbor` (HarborSpec, its bash harness, Harbor's docker environment and
verifier), a scripted policy's bash commands per case, and print each case's reward as TRL reads it.

    python harbor_trl_play.py TASKS_DIR CASES_JSON     (CASES_JSON: {"task folder name": {"case": [command, ...]}})
"""

import json
import sys

from trl.experimental.harbor import HarborSpec


def main(tasks: str, cases_path: str) -> None:
    with open(cases_path) as file:
        cases = json.load(file)
    spec = HarborSpec(tasks, agent="bash", environment_type="docker")
    rows = {row["task_dir"].rsplit("/", 1)[-1]: row for row in spec.train_dataset}
    rewards = {}
    for name, by_case in cases.items():
        for case, commands in by_case.items():
            env = spec.environment_factory()
            instruction = env.reset(task_dir=rows[name]["task_dir"])
            assert instruction.strip(), "no instruction"
            outputs = [env.bash(command) for command in commands]
            (reward,) = spec.reward_funcs(environments=[env])
            rewards[f"{name}/{case}"] = {
                "reward": reward,
                "outputs": outputs,
                "whoami": env.bash("whoami").strip(),
            }
            env._run(
                env._stop()
            )  # the sandbox is not needed past its reward (TRL tears it down at the next reset)
    print(json.dumps(rewards))


if __name__ == "__main__":
    main(*sys.argv[1:])
