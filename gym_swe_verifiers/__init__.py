"""gym_swe's taskset for verifiers, under the name verifiers looks it up by: ``vf-eval gym-swe-verifiers``.

verifiers imports a taskset id as a top-level package and takes the `Taskset`, `Env` and `Harness` its
``__all__`` exports; the classes live in `gym_swe.integrations.verifiers`.
"""

from gym_swe.integrations.verifiers import GymSweEnv, GymSweHarness, GymSweTaskset

__all__ = ["GymSweEnv", "GymSweHarness", "GymSweTaskset"]
