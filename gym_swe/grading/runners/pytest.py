"""The pytest runner: pytest node ids, run by gym_swe's pytest driver (`gym_swe.grading.pytest_driver`).

The dataset's ids are pytest node ids with their real-world quirks (`gym_swe.tasks.test_ids`); they are
matched to the outcomes as they are (`match_outcomes`), so `node_ids` leaves them alone. pytest and its
plugins come from the environment, the configuration file and rootdir from the probe of the pristine tree,
and the JUnit report is written as a cross-check of the stream.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from gym_swe.grading.runners.base import TestRunner
from gym_swe.tasks.id_formats import unreadable
from gym_swe.tasks.test_ids import files_to_run

if TYPE_CHECKING:
    from gym_swe.grading.environment import Environment


class PytestRunner(TestRunner):
    name = "pytest"
    driver = ""  # the pytest driver itself, which the grader always writes
    needs_pytest = True
    junit = True

    def unsupported(self, ids: Sequence[str]) -> list[str]:
        return unreadable(self.name, ids)

    def test_files(self, ids: Sequence[str], test_patch: str) -> list[str]:
        return files_to_run(ids)

    def node_ids(self, ids: Sequence[str], sources: Mapping[str, str]) -> dict[str, str]:
        return {raw: raw for raw in ids}

    def command(
        self,
        workdir: str,
        driver: str,
        files: Sequence[str],
        environment: Environment,
        options: Sequence[str],
    ) -> str:
        if environment is None:
            raise ValueError("pytest's command needs the probed environment (its plugins, configuration)")
        hosted = " self-hosted" if environment.self_hosted else ""
        plugins = shlex.quote(",".join(environment.plugins))
        arguments = [*options, *environment.config_options(), *files]
        return (
            f"cd {shlex.quote(workdir)} && python {driver} run {shlex.quote(workdir)} "
            f"{plugins}{hosted} -- {' '.join(map(shlex.quote, arguments))}"
        )
